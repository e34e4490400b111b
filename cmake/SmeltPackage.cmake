# The installable package: one shared library (libsmelt.so, the target smelt::smelt) holding the
# static libraries' objects, the public headers under include/smelt/ (the umbrella header
# <smelt/smelt.h> and what it includes, none of which exposes LLVM, ONNX or protobuf; and the C API,
# <smelt/c_api.h>, plain C99), the CLI, and a
# CMake package config so an outside project writes
#   find_package(smelt REQUIRED)
#   target_link_libraries(app PRIVATE smelt::smelt)
# The backends' own dependencies (LLVM, spdlog, protobuf, ...) are linked into libsmelt.so privately;
# only fmt (used by the public headers' error formatting) is a dependency of the package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(smelt_core_libraries smelt_ir smelt_autodiff smelt_passes smelt_codegen smelt_runtime smelt_distributed smelt_frontend smelt_nn
    smelt_c_api)
set(smelt_objects "")
foreach(lib IN LISTS smelt_core_libraries)
  list(APPEND smelt_objects $<TARGET_OBJECTS:${lib}>)
endforeach()
add_library(smelt_shared SHARED ${smelt_objects})
# The same static libraries again, for their dependencies (LLVM, OpenCL loader, kernel cache, ...):
# their members are already present as objects, so the linker takes nothing twice.
target_link_libraries(smelt_shared PRIVATE ${smelt_core_libraries})
target_link_libraries(smelt_shared INTERFACE fmt::fmt)
# The public headers are C++20: a project linking smelt::smelt gets the standard with it.
target_compile_features(smelt_shared INTERFACE cxx_std_20)
target_include_directories(smelt_shared INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
                                                  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/smelt>)
set_target_properties(smelt_shared PROPERTIES OUTPUT_NAME smelt EXPORT_NAME smelt VERSION ${PROJECT_VERSION}
                                              SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})

# The public headers: the umbrella header and everything it includes (tests/package checks that an
# outside project compiles against exactly these).
set(smelt_public_headers
  autodiff/backward.h autodiff/gradient_tape.h
  frontend/data/idx.h frontend/model_loader.h frontend/npy.h frontend/onnx/onnx_export.h
  frontend/nn/attention.h frontend/nn/batches.h frontend/nn/data_parallel.h frontend/nn/checkpoint.h frontend/nn/fit.h frontend/nn/progress.h
  frontend/nn/graph_context.h frontend/nn/imported.h frontend/nn/init.h frontend/nn/layers.h frontend/nn/losses.h frontend/nn/models.h
  frontend/nn/optimizers.h frontend/nn/safetensors.h frontend/nn/train_step.h
  ir/attribute.h ir/builder.h ir/collective.h ir/dtype.h ir/graph.h ir/half.h ir/interpreter.h ir/lowering.h
  ir/op_registry.h ir/parser.h ir/printer.h ir/support/expected.h ir/support/host_block_cache.h ir/tensor.h ir/type.h
  passes/index_checks.h passes/pass.h passes/pass_manager.h
  runtime/distributed/mpi_group.h runtime/exec/executable.h runtime/device/device.h runtime/device/device_list.h runtime/device/device_tensor.h
  runtime/device/memory_pool.h runtime/exec/working_memory.h runtime/placement/graph_work.h runtime/placement/placement.h
  runtime/placement/placement_table.h)
foreach(header IN LISTS smelt_public_headers)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/smelt/${dir})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/smelt/smelt.h ${PROJECT_SOURCE_DIR}/include/smelt/c_api.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/smelt)

install(TARGETS smelt_shared EXPORT smeltTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS smelt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT smeltTargets NAMESPACE smelt:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/smelt)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/smeltConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/smeltConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/smelt)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/smeltConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/smeltConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/smeltConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/smelt)

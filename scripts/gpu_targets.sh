# What a GPU host builds (no LLVM, no ONNX): scripts/gpu_check.sh builds these there, and
# scripts/test.sh builds the same here in CI, so the configuration cannot break unnoticed.
gpu_targets=(smelt smelt_cuda_backend_tests smelt_gpu_tests smelt_c_renderer_tests smelt_runtime_tests smelt_nn_tests
             train_digits smelt_train_steps)

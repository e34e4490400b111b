// OpenCL C 1.2 dialect of the C-family renderer (codegen/c_renderer.h), for PoCL's CPU device and
// GPU ICDs alike: no half arithmetic (f16 and bf16 are ushort patterns computed in float), doubles
// only with cl_khr_fp64, and each buffer a slice of one arena: `__global T* b<i>, long b<i>_off`.
//   OpenClRenderer r(device.fp64);
//   SMELT_TRY(std::string source, r.renderSource(kernels, symbols));
#pragma once

#include "codegen/c_renderer.h"

namespace smelt::codegen {

/// See the file comment.
class OpenClRenderer final : public CRenderer {
 public:
  /// `fp64`: the device has cl_khr_fp64 (DeviceInfo::fp64).
  explicit OpenClRenderer(bool fp64 = true) : fp64_(fp64) {}

  std::string_view backend() const override { return "opencl"; }
  std::string kernelPrefix() const override { return "__kernel void"; }
  std::string helperPrefix() const override { return "static inline"; }
  std::string bufferQualifier() const override { return "__global "; }
  std::string threadIndex() const override { return "get_global_id(0)"; }
  std::string blockIndex() const override { return "(long)get_group_id(0)"; }
  std::string threadInBlock() const override { return "(long)get_local_id(0)"; }
  std::string blockBarrier() const override { return "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"; }
  std::string sharedQualifier() const override { return "__local "; }
  std::string restrictQualifier() const override { return "restrict "; }
  // PoCL 3.1 computes wrong values in a work-group region holding two split loops when the kernel's
  // buffers are slices of one cl_mem (as an executable's arena binds them); a barrier between the
  // loops avoids it (tests/codegen/c_renderers/test_block_kernels.cpp). A barrier costs a GPU little.
  bool barrierBetweenSplitLoops() const override { return true; }
  // vload4 / vstore4 need only the elements' alignment.
  std::string vectorLoad(const std::string& type, const std::string& pointer) const override {
    return "vload" + type.substr(type.size() - 1) + "(0, " + pointer + ")";
  }
  std::string vectorStore(const std::string& type, const std::string& pointer, const std::string& value) const override {
    return "vstore" + type.substr(type.size() - 1) + "(" + value + ", 0, " + pointer + ");";
  }
  std::string vectorAlignment(const std::string&, int64_t) const override { return ""; }
  std::string typeName(DType type) const override;
  std::string int64Suffix() const override { return "L"; }
  std::string floatToBits(const std::string& x, bool isDouble) const override;
  std::string bitsToFloat(const std::string& x, bool isDouble) const override;
  std::string mathFunction(std::string_view base, bool) const override { return std::string(base); }
  std::string preludeHeader() const override;
  bool bufferOffsets() const override { return true; }
  bool fp64() const override { return fp64_; }

 private:
  bool fp64_;
};

}  // namespace smelt::codegen

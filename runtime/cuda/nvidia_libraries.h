// Where NVIDIA's libraries live on GPU hosts: the loader's own path (sonames), the CUDA toolkit
// ($CUDA_HOME, /usr/local/cuda), and the pip wheels PyTorch and JAX install (site-packages/nvidia/
// <component>/lib, and nvidia/cu13/lib for the CUDA 13 wheels) under a virtualenv, conda, the user's
// ~/.local or the system Python. smelt dlopens the first that loads.
//   auto lib = DynamicLibrary::openFirst(nvidiaLibraryCandidates("cublas", {"libcublas.so.13"}));
#pragma once

#include <string>
#include <vector>

namespace smelt::cuda {

/// Candidates for `sonames` (newest first) of the pip component `component` ("cublas", "cudnn",
/// "nccl"): each soname as it is, then under $CUDA_HOME/lib64 and /usr/local/cuda/lib64, then every
/// matching file in the wheel folders that exist.
std::vector<std::string> nvidiaLibraryCandidates(const std::string& component, const std::vector<std::string>& sonames);

}  // namespace smelt::cuda

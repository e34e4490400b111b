// Probing and opening devices by id.
#include "runtime/device/device_list.h"

#include "runtime/cpu/cpu_device.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/hip/hip_device.h"
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl/opencl_device.h"
#endif
#include "runtime/cuda/cuda_driver.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>

namespace smelt {

namespace {

#ifdef SMELT_HAVE_OPENCL
Expected<std::shared_ptr<Device>> openClByOrdinal(int ordinal) {
  SMELT_TRY(std::vector<opencl::DeviceInfo> all, opencl::listDevices());
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= all.size()) {
    return makeError("no device opencl:{} ({} OpenCL devices)", ordinal, all.size());
  }
  return openClDevice(all[static_cast<size_t>(ordinal)].name);
}
#endif

}  // namespace

std::vector<DeviceProbe> probeDevices() {
  std::vector<DeviceProbe> probes;
  probes.push_back({DeviceKind::kCpu, {cpuDevice()->description()}, {}});

  DeviceProbe opencl{DeviceKind::kOpenCl, {}, {}};
#ifdef SMELT_HAVE_OPENCL
  if (Expected<std::vector<opencl::DeviceInfo>> all = opencl::listDevices(); !all) {
    opencl.unavailable = all.error().message();
  } else {
    for (size_t i = 0; i < all->size(); ++i) {
      if (auto d = openClByOrdinal(static_cast<int>(i))) {
        opencl.devices.push_back((*d)->description());
      } else {
        opencl.unavailable += d.error().message();
      }
    }
  }
#else
  opencl.unavailable = "smelt was built without OpenCL";
#endif
  probes.push_back(std::move(opencl));

  DeviceProbe cuda{DeviceKind::kCuda, {}, {}};
  if (Expected<int> count = cuda::deviceCount(); !count) {
    cuda.unavailable = count.error().message();
  } else {
    for (int i = 0; i < *count; ++i) {
      if (auto d = cudaDevice(i)) cuda.devices.push_back((*d)->description());
      else cuda.unavailable += d.error().message();
    }
  }
  probes.push_back(std::move(cuda));

  DeviceProbe hip{DeviceKind::kHip, {}, {}};
  if (Expected<int> count = hipDeviceCount(); !count) {
    hip.unavailable = count.error().message();
  } else {
    for (int i = 0; i < *count; ++i) {
      if (auto d = hipDevice(i)) hip.devices.push_back((*d)->description());
      else hip.unavailable += d.error().message();
    }
  }
  probes.push_back(std::move(hip));
  return probes;
}

std::vector<DeviceDescription> listDevices() {
  std::vector<DeviceDescription> all;
  for (DeviceProbe& p : probeDevices()) all.insert(all.end(), p.devices.begin(), p.devices.end());
  return all;
}

Expected<std::shared_ptr<Device>> openDevice(std::string_view id) {
  std::string_view kind = id.substr(0, id.find(':'));
  int ordinal = 0;
  if (size_t colon = id.find(':'); colon != std::string_view::npos) {
    std::string_view number = id.substr(colon + 1);
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), ordinal);
    if (ec != std::errc() || end != number.data() + number.size() || ordinal < 0) {
      return makeError("device '{}': expected kind:N, as opencl:0", id);
    }
  }
  Expected<std::shared_ptr<Device>> device = makeError("unknown device kind '{}'", kind);
  if (kind == "cpu") {
    device = cpuDevice();
  } else if (kind == "opencl") {
#ifdef SMELT_HAVE_OPENCL
    device = id.find(':') == std::string_view::npos ? openClDevice() : openClByOrdinal(ordinal);
#else
    device = Error("smelt was built without OpenCL");
#endif
  } else if (kind == "cuda") {
    device = cudaDevice(ordinal);
  } else if (kind == "hip") {
    device = hipDevice(ordinal);
  }
  if (device) return device;
  std::vector<std::string> ids;
  for (const DeviceDescription& d : listDevices()) ids.push_back(d.id);
  return device.error().withContext(fmt::format("device '{}' (devices here: {})", id, fmt::join(ids, ", ")));
}

}  // namespace smelt

// MemoryPool: size classes, reuse, statistics, zeroing and poisoning of recycled blocks, the
// out-of-memory retry (through SMELT_FAULTS' injector), caching off, and many threads renting at once.
#include "runtime/cpu/cpu_device.h"
#include "runtime/device/device_list.h"
#include "runtime/device/device_tensor.h"
#include "runtime/device/fault_injection.h"
#include "runtime/device/memory_pool.h"
#include "tests/support/devices.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <thread>
#include <vector>

using namespace smelt;

namespace {

/// Clears injected faults when a test ends, whatever happens.
struct FaultScope {
  explicit FaultScope(std::string_view spec) { REQUIRE(faultInjector().configure(spec).ok()); }
  ~FaultScope() { (void)faultInjector().configure(""); }
};

std::vector<uint8_t> readBytes(Device& device, DeviceMemory m, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  REQUIRE(device.copyOut(out.data(), m, 0, bytes, device.defaultStream()).ok());
  return out;
}

}  // namespace

TEST_CASE("memory pool: size classes") {
  CHECK(MemoryPool::roundSize(0) == 512);
  CHECK(MemoryPool::roundSize(512) == 512);
  CHECK(MemoryPool::roundSize(513) == 1024);
  CHECK(MemoryPool::roundSize(600000) == 1 << 20);
  CHECK(MemoryPool::roundSize((1 << 20) + 1) == 2 << 20);
  CHECK(MemoryPool::roundSize(5 << 20) == 5 << 20);
}

TEST_CASE("memory pool: returned blocks are reused, counted, and zeroed before reuse") {
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto pool = MemoryPool::create(device, PoolOptions{.caching = true, .poison = false});
    std::vector<uint8_t> ones(3000, 0x5A);
    {
      auto b = pool->rent(3000);
      REQUIRE(b.ok());
      CHECK(b->memory().bytes == 4096);
      REQUIRE(device->copyIn(b->memory(), 0, ones.data(), ones.size(), device->defaultStream()).ok());
    }
    PoolStats s = pool->stats();
    CHECK(s.deviceAllocations == 1);
    CHECK(s.cachedBytes == 4096);
    CHECK(s.inUseBytes == 0);
    auto again = pool->rent(2500);  // the same class: the cached block, zeroed
    REQUIRE(again.ok());
    for (uint8_t byte : readBytes(*device, again->memory(), 4096)) REQUIRE(byte == 0);
    s = pool->stats();
    CHECK(s.deviceAllocations == 1);
    CHECK(s.hits == 1);
    CHECK(s.rents == 2);
    CHECK(s.hitRate() == doctest::Approx(0.5));
    CHECK(s.peakBytes == 4096);
    // A different class does not take it; a large block serves a request up to a quarter smaller.
    auto small = pool->rent(100);
    REQUIRE(small.ok());
    CHECK(pool->stats().deviceAllocations == 2);
    again->reset();
    small->reset();
    { auto big = pool->rent(4 << 20); REQUIRE(big.ok()); }
    auto fits = pool->rent((3 << 20) + 100);  // rounds to 4 MiB: served by the cached 4 MiB block
    REQUIRE(fits.ok());
    CHECK(pool->stats().deviceAllocations == 3);
    fits->reset();
    pool->trim();
    CHECK(pool->stats().cachedBytes == 0);
    CHECK(pool->stats().deviceFrees == 3);
  }
}

TEST_CASE("memory pool: a block rented to be overwritten has only its tail zeroed") {
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto pool = MemoryPool::create(device, PoolOptions{.caching = true, .poison = false});
    std::vector<uint8_t> old(4096, 0x5A);
    {
      auto b = pool->rent(4096);
      REQUIRE(b.ok());
      REQUIRE(device->copyIn(b->memory(), 0, old.data(), old.size(), device->defaultStream()).ok());
    }
    // The renter writes [0, 3000) itself; past that, nothing of the old tensor may remain.
    auto again = pool->rentToOverwrite(3000);
    REQUIRE(again.ok());
    CHECK(pool->stats().hits == 1);
    std::vector<uint8_t> mine(3000, 0x11);
    REQUIRE(device->copyIn(again->memory(), 0, mine.data(), mine.size(), device->defaultStream()).ok());
    std::vector<uint8_t> bytes = readBytes(*device, again->memory(), 4096);
    for (size_t i = 0; i < bytes.size(); ++i) REQUIRE(bytes[i] == (i < 3000 ? 0x11 : 0));
  }
}

TEST_CASE("memory pool: poisoning fills returned blocks with 0xFF") {
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto pool = MemoryPool::create(device, PoolOptions{.caching = true, .poison = true});
    { auto b = pool->rent(1000); REQUIRE(b.ok()); }
    auto b = pool->rent(1000);
    REQUIRE(b.ok());
    CHECK(pool->stats().hits == 1);
    for (uint8_t byte : readBytes(*device, b->memory(), 1000)) REQUIRE(byte == 0xFF);
  }
}

TEST_CASE("memory pool: out of memory frees the cache and retries once, then says what it holds") {
  // On every device but the CPU: SMELT_FAULTS makes the driver's own error code come back
  // (CL_MEM_OBJECT_ALLOCATION_FAILURE, CUDA_ERROR_OUT_OF_MEMORY), as a full device's would. (The CPU
  // is where executables fall back to, so the injector leaves its allocations alone.)
  std::vector<std::shared_ptr<Device>> devices = testing::everyAccelerator();
  if (devices.empty()) MESSAGE("no device besides the CPU");
  for (const std::shared_ptr<Device>& device : devices) {
  CAPTURE(device->id());
  auto pool = MemoryPool::create(device, PoolOptions{.caching = true, .poison = false});
  { auto b = pool->rent(1 << 20); REQUIRE(b.ok()); }
  CHECK(pool->stats().cachedBytes == 1 << 20);
  {
    FaultScope faults("oom=1");
    auto b = pool->rent(8 << 20);  // the first allocation fails; the retry after the trim succeeds
    REQUIRE(b.ok());
    PoolStats s = pool->stats();
    CHECK(s.outOfMemoryRetries == 1);
    CHECK(s.cachedBytes == 0);
    CHECK(s.deviceFrees == 1);
  }
  {
    FaultScope faults("oom=always");
    auto b = pool->rent(3 << 20);
    REQUIRE_FALSE(b.ok());
    CHECK(isOutOfMemory(b.error()));
    CHECK(b.error().message().find(device->id()) != std::string::npos);
    const std::string& m = b.error().message();
    CHECK((m.find("CL_MEM_OBJECT_ALLOCATION_FAILURE") != std::string::npos ||
           m.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos || m.find("hipMalloc") != std::string::npos));
    // The CPU still allocates: it is where executables go when a device is full.
    CHECK(MemoryPool::create(cpuDevice())->rent(3 << 20).ok());
  }
  CHECK(pool->rent(3 << 20).ok());  // faults cleared: allocations work again
  }
}

TEST_CASE("memory pool: caching off allocates and frees every time") {
  auto pool = MemoryPool::create(cpuDevice(), PoolOptions{.caching = false, .poison = false});
  for (int i = 0; i < 5; ++i) {
    auto b = pool->rent(1000);
    REQUIRE(b.ok());
  }
  PoolStats s = pool->stats();
  CHECK(s.deviceAllocations == 5);
  CHECK(s.deviceFrees == 5);
  CHECK(s.hits == 0);
  CHECK(s.cachedBytes == 0);
}

TEST_CASE("memory pool: 16 threads renting and returning at once keep the books straight") {
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto pool = MemoryPool::create(device, PoolOptions{.caching = true, .poison = false});
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          auto b = pool->rent(static_cast<size_t>(256 + 512 * ((t + i) % 7)));
          if (!b.ok()) ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(failures == 0);
    PoolStats s = pool->stats();
    CHECK(s.rents == 800);
    CHECK(s.inUseBytes == 0);
    CHECK(s.deviceAllocations <= 16 * 4);  // at most one block per thread per class in use at once
    CHECK(s.deviceAllocations + s.hits == s.rents);
  }
}

TEST_CASE("device tensors: host round trip, and zeros") {
  uint64_t seed = testing::testSeed();
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    Tensor host = testing::randomTensor(TensorType{DType::f32, {7, 9}}, seed);
    auto t = DeviceTensor::fromHost(device, host);
    REQUIRE(t.ok());
    auto back = t->toHost();
    REQUIRE(back.ok());
    CHECK(std::memcmp(back->raw(), host.raw(), host.byteSize()) == 0);
    auto z = DeviceTensor::zeros(device, TensorType{DType::f64, {33}});
    REQUIRE(z.ok());
    auto zb = z->toHost();
    REQUIRE(zb.ok());
    for (double v : zb->toDoubles()) REQUIRE(v == 0.0);
    Tensor wrong(TensorType{DType::f32, {3}});
    CHECK_FALSE(t->copyFrom(wrong).ok());
  }
}

TEST_CASE("fault injection: the SMELT_FAULTS syntax") {
  FaultInjector f;
  CHECK(f.configure("oom=2,lost=1,unsupported=exp+tanh").ok());
  CHECK(f.trigger(Fault::kOutOfMemory));
  CHECK(f.trigger(Fault::kOutOfMemory));
  CHECK_FALSE(f.trigger(Fault::kOutOfMemory));
  CHECK(f.trigger(Fault::kDeviceLost));
  CHECK_FALSE(f.trigger(Fault::kDeviceLost));
  CHECK(f.unsupported("tanh"));
  CHECK_FALSE(f.unsupported("add"));
  CHECK(f.injected(Fault::kOutOfMemory) == 2);
  CHECK_FALSE(f.configure("oom=x").ok());
  CHECK_FALSE(f.configure("meltdown=1").ok());
  CHECK(f.unsupported("exp"));  // a rejected spec changes nothing
}

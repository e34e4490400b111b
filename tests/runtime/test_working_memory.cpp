// Shared working memory (runtime/exec/working_memory.h): one block, the size of its users' largest need,
// grown when a larger user joins, every other user then rebound to the new block; a user on another
// device gets a block of its own. Executables sharing one (a symbolic graph's bindings, a training step's
// batch sizes) are checked against the reference in test_symbolic_executables.cpp and tests/nn.
#include "runtime/exec/working_memory.h"

#include "tests/support/devices.h"

#include <doctest/doctest.h>

using namespace smelt;

namespace {

/// A user that records where each rebinding pointed it.
struct RecordingUser : WorkingMemoryUser {
  explicit RecordingUser(SharedWorkingMemory& shared) : shared(shared) {}
  Status rebindWorkingMemory() override {
    rebound.push_back(shared.memory().handle);
    return Status::success();
  }
  SharedWorkingMemory& shared;
  std::vector<void*> rebound;
};

}  // namespace

TEST_CASE("working memory: one block, the largest need: a larger user grows it and the others move to the new block") {
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    SharedWorkingMemory shared;
    CHECK(shared.accepts(device));
    RecordingUser a(shared), b(shared), c(shared), d(shared);
    REQUIRE(shared.join(&a, device, 4096).ok());
    CHECK(shared.bytes() == 4096);
    CHECK(shared.memory().bytes >= 4096);
    // Smaller: served by the block as it is.
    REQUIRE(shared.join(&b, device, 1000).ok());
    CHECK(shared.bytes() == 4096);
    CHECK(shared.rentals() == 1);
    CHECK(a.rebound.empty());
    // Larger: a new block, the users already there rebound to it, the newcomer not (it binds itself).
    REQUIRE(shared.join(&c, device, 1 << 20).ok());
    CHECK(shared.bytes() == 1 << 20);
    CHECK(shared.rentals() == 2);
    CHECK(shared.memory().bytes >= size_t{1} << 20);
    REQUIRE(a.rebound.size() == 1);
    REQUIRE(b.rebound.size() == 1);
    CHECK(a.rebound[0] == shared.memory().handle);
    CHECK(b.rebound[0] == shared.memory().handle);
    CHECK(c.rebound.empty());
    // One that left is not told again.
    shared.leave(&a);
    REQUIRE(shared.join(&d, device, 2 << 20).ok());
    CHECK(a.rebound.size() == 1);
    CHECK(b.rebound.size() == 2);
    CHECK(c.rebound.size() == 1);
    // An empty need still gets a block (some drivers refuse empty allocations).
    SharedWorkingMemory tiny;
    RecordingUser e(tiny);
    REQUIRE(tiny.join(&e, device, 0).ok());
    CHECK(tiny.bytes() > 0);
    CHECK(static_cast<bool>(tiny.memory()));
    // Another device's graph takes a block of its own (CompiledGraph checks accepts()).
    for (const std::shared_ptr<Device>& other : testing::everyDevice()) {
      CHECK(shared.accepts(other) == (other == device));
    }
  }
}

// CompiledGraph, running: bind what a run is fed and what it returns (in place on the CPU, through
// arena slots and pinned staging for a host run elsewhere, where they are for a device-resident run),
// then replay the steps on the stream (see compiled_graph.h).
#include "runtime/exec/compiled_graph_impl.h"

#include "codegen/log.h"
#include "ir/collective.h"
#include "ir/interpreter.h"
#include "runtime/cpu/thread_pool.h"
#include "runtime/exec/run_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <span>

namespace smelt {

namespace {

KernelBufferArg hostArg(const Tensor& t) {
  return {DeviceMemory{const_cast<std::byte*>(t.raw()), t.byteSize()}, 0, 1};
}

KernelBufferArg deviceArg(const DeviceTensor& t) { return {t.memory(), 0, 1}; }

char* pointerOf(const KernelBufferArg& arg) { return static_cast<char*>(arg.memory.handle) + arg.byteOffset; }

}  // namespace

namespace {

/// `event` recorded on `on` after what it holds: the same event again where the device can (no event made
/// per run), else a new one.
Status recordOn(DeviceStream& on, std::unique_ptr<DeviceEvent>& event) {
  if (event) {
    SMELT_TRY(bool again, on.recordAgain(*event));
    if (again) return Status::success();
  }
  SMELT_TRY(event, on.record());
  return Status::success();
}

}  // namespace

Status CompiledGraph::Impl::joinDefaultStream() {
  if (!ownStream) return Status::success();
  // Pool fills and uploads enqueued on the default stream come first.
  SMELT_CHECK_OK(recordOn(device->defaultStream(), joinEvent));
  return stream->wait(*joinEvent);
}

Status CompiledGraph::Impl::rejoinDefaultStream() {
  if (!ownStream) return Status::success();
  // Whoever uses the outputs next on the default stream waits for this run, on the device.
  SMELT_CHECK_OK(recordOn(*stream, rejoinEvent));
  return device->defaultStream().wait(*rejoinEvent);
}

Expected<std::vector<Tensor>> CompiledGraph::Impl::download(const Step& step, bool results) {
  std::vector<Tensor> tensors;
  const Node& node = *step.node;
  size_t first = results ? node.numOperands() : 0;
  size_t count = results ? node.results().size() : node.numOperands();
  for (size_t i = 0; i < count; ++i) {
    Tensor t(results ? node.result(i)->type() : node.operand(i)->type());
    const KernelBufferArg& arg = step.args[first + i];
    // Into pageable memory the copy waits for the work before it on the stream.
    SMELT_CHECK_OK(device->copyOut(t.raw(), arg.memory, static_cast<size_t>(arg.byteOffset), t.byteSize(), *stream));
    tensors.push_back(std::move(t));
  }
  return tensors;
}

/// A node without a kernel: its operands come to the host, the reference interpreter computes it,
/// and its results go back.
Status CompiledGraph::Impl::interpretStep(const Step& step) {
  const Node& node = *step.node;
  SMELT_TRY(std::vector<Tensor> operands, download(step, false));
  SMELT_TRY(std::vector<Tensor> results, evaluateNode(graph, node, operands));
  for (size_t r = 0; r < results.size(); ++r) {
    const KernelBufferArg& arg = step.args[node.numOperands() + r];
    SMELT_CHECK_OK(device->copyIn(arg.memory, static_cast<size_t>(arg.byteOffset), results[r].raw(),
                                  results[r].byteSize(), *stream));
  }
  return Status::success();
}

Status CompiledGraph::Impl::runStep(Step& step) {
  switch (step.kind) {
    case Step::Kind::kKernel:
      if (step.shape.points == 0) return Status::success();
      return step.launch->launch(*stream);
    case Step::Kind::kProduct: {
      // The product first, then the epilogue reading it from one more buffer after the results.
      const GemmPlan& plan = *step.product;
      size_t operands = step.node->numOperands();
      KernelBufferArg product =
          plan.result >= 0 ? step.args[operands + static_cast<size_t>(plan.result)] : workingArg(layout.scratchOffset);
      KernelBufferArg scratch = workingArg(layout.scratchOffset + alignUp(step.productBytes, kArenaAlignment));
      ProductBuffers buffers{std::span(step.args).first(operands), product, scratch};
      if (step.conv) {
        SMELT_CHECK_OK(runDeviceConvolution(step, buffers));
      } else {
        SMELT_CHECK_OK(backend->runProduct(plan, buffers, *stream));
      }
      if (step.launch && step.shape.points > 0) return step.launch->launch(*stream);
      return Status::success();
    }
    case Step::Kind::kHost: {
      for (size_t b = 0; b < step.args.size(); ++b) step.pointers[b] = pointerOf(step.args[b]);
      ThreadPool& pool = ThreadPool::global();
      step.host(step.pointers.data(), [&](int64_t count, const std::function<void(int64_t, int64_t)>& body) {
        pool.parallelFor(count, body, step.shape.parallel);
      });
      return Status::success();
    }
    case Step::Kind::kCollective: {
      for (size_t b = 0; b < step.args.size(); ++b) step.pointers[b] = pointerOf(step.args[b]);
      return step.collective(step.pointers.data());
    }
    case Step::Kind::kDeviceCollective:
      return runDeviceCollective(step);
    case Step::Kind::kInterpreted: return interpretStep(step);
  }
  return Status::success();
}

Status CompiledGraph::Impl::runDeviceCollective(const Step& step) {
  using Op = Step::OnDevice::Op;
  const Step::OnDevice& c = *step.onDevice;
  const KernelBufferArg &operand = step.args[0], &result = step.args[1];
  const bool inPlace = operand.memory.handle == result.memory.handle && operand.byteOffset == result.byteOffset;
  const auto bytes = static_cast<size_t>(c.type.byteSize());
  auto copyToResult = [&]() -> Status {
    if (inPlace || bytes == 0) return Status::success();
    return device->copy(result.memory, static_cast<size_t>(result.byteOffset), operand.memory,
                        static_cast<size_t>(operand.byteOffset), bytes, *stream);
  };
  switch (c.op) {
    case Op::kAllReduce:
      return backend->allReduce(operand, result, c.type.numel(), c.type.dtype, c.mean, *stream);
    case Op::kStart: {
      // The sum runs in place in the result buffer, which only the wait reads (compiled_graph.cpp checks), on a
      // stream of its own: the operand's buffer is free for the steps after this one once the copy is done.
      SMELT_CHECK_OK(copyToResult());
      if (!collectiveStream) {
        SMELT_TRY(collectiveStream, device->createStream());
      }
      SMELT_CHECK_OK(recordOn(*stream, collectiveReady));
      SMELT_CHECK_OK(collectiveStream->wait(*collectiveReady));
      SMELT_CHECK_OK(backend->allReduce(result, result, c.type.numel(), c.type.dtype, c.mean, *collectiveStream));
      return recordOn(*collectiveStream, collectiveDone[c.tag]);
    }
    case Op::kWait: {
      auto done = collectiveDone.find(c.tag);
      if (done == collectiveDone.end() || !done->second) {
        return makeError("{}: no all_reduce_start of tag {} ran before it", step.label, c.tag);
      }
      SMELT_CHECK_OK(stream->wait(*done->second));
      return copyToResult();
    }
  }
  return Status::success();
}

Status CompiledGraph::Impl::execute() {
  // This run's feeds and outputs into every step that reads or writes them.
  for (Step& step : steps) {
    for (uint32_t b : step.dynamicBuffers) {
      step.args[b] = resolve(step.buffers[b], step.args[b].elementBytes);
      if (step.launch) step.launch->setBuffer(b, step.args[b]);
    }
  }
  if (!profiling && !checkKernels && options.replay && !hostMemory && !replayOff) {
    SMELT_TRY(bool replayed, replay());
    if (replayed) return Status::success();
  }
  if (profiling && profile.empty()) profile.resize(steps.size());
  // On a device whose streams time events (CUDA, HIP), each step is timed between two events on the
  // device, read back after the run: kernel time without a host wait after every step. Elsewhere (the
  // CPU; OpenCL queues without profiling) the host times each step, waiting for it on a device.
  const bool counting = profiling && profile.counting();
  if (counting && !hostMemory && !eventTiming) eventTiming = probeEventTiming();
  const bool byEvents = counting && !hostMemory && *eventTiming;
  std::vector<std::pair<std::unique_ptr<DeviceEvent>, std::unique_ptr<DeviceEvent>>> events(byEvents ? steps.size() : 0);
  if (counting) profile.setClock(hostMemory ? "host" : byEvents ? "device events" : "host, waiting for each step");
  for (size_t i = 0; i < steps.size(); ++i) {
    Step& step = steps[i];
    StepProfile::Clock::time_point started;
    if (profiling) started = StepProfile::now();
    if (byEvents) {
      SMELT_TRY(events[i].first, stream->record(true));
    }
    // SMELT_CHECK_KERNELS=1: the node's operands are copied before it runs (an in-place result may
    // overwrite one), and its results are checked against the reference interpreter.
    std::vector<Tensor> before;
    const bool check = checkKernels && step.kind != Step::Kind::kInterpreted && step.kind != Step::Kind::kCollective;
    if (check) {
      SMELT_TRY(before, download(step, false));
    }
    if (Status ran = runStep(step); !ran.ok()) return ran.error().withContext(step.label);
    if (check) {
      SMELT_TRY(std::vector<Tensor> after, download(step, true));
      SMELT_CHECK_OK(checkAgainstReference(graph, *step.node, step.label, before, after));
    }
    if (byEvents) {
      SMELT_TRY(events[i].second, stream->record(true));
    } else if (counting) {
      if (!hostMemory) SMELT_CHECK_OK(stream->synchronize());  // time the step, not its enqueueing
      profile.add(i, started);
    }
  }
  if (byEvents) {
    SMELT_CHECK_OK(stream->synchronize());
    for (size_t i = 0; i < events.size(); ++i) {
      SMELT_TRY(double ms, events[i].second->elapsedMsSince(*events[i].first));
      profile.addNanoseconds(i, static_cast<int64_t>(ms * 1e6));
    }
  }
  if (profiling) profile.finishRun();
  return Status::success();
}

Expected<bool> CompiledGraph::Impl::replay() {
  // Not the first run: its one-time work (a library's handle and workspace) must not be recorded.
  if (executions++ == 0) return false;
  for (const Step& s : steps) {
    if (s.kind == Step::Kind::kHost || s.kind == Step::Kind::kCollective || s.kind == Step::Kind::kInterpreted) {
      replayOff = true;  // host work cannot be recorded on a device stream
      return false;
    }
  }
  // NCCL requires every rank to launch a collective the same way, captured or not, and from the same capture;
  // whether a run replays is decided here per rank (by fed addresses, a failed capture, profiling). Until the
  // ranks agree on it, data-parallel steps launch step by step; a world of one replays.
  if (deviceCollectives && collectiveGroup() && collectiveGroup()->size() > 1) {
    replayOff = true;
    return false;
  }
  // This run's fed and returned buffers, and a recording made with the same (compared in place: a replayed
  // run allocates nothing).
  runArgs.clear();
  for (const Step& s : steps) {
    for (uint32_t b : s.dynamicBuffers) runArgs.emplace_back(s.args[b].memory.handle, s.args[b].byteOffset);
  }
  auto match =
      std::find_if(recordings.begin(), recordings.end(), [&](const Recording& r) { return r.args == runArgs; });
  if (match == recordings.end()) {
    // Fed at new addresses: record again, but not on every run (that costs more than it saves). A few
    // recordings are kept: buffers that take turns (a state entry written beside its old value, then
    // swapped) replay each of theirs.
    constexpr int kMaxRerecords = 8;
    constexpr size_t kKeptRecordings = 4;
    if (!recordings.empty() && ++rerecords > kMaxRerecords) {
      logger().debug("{}: fed at new addresses {} times; launching step by step from now on", device->id(), rerecords);
      replayOff = true;
      recordings.clear();
      return false;
    }
    auto work = stream->capture([&]() -> Status {
      for (Step& step : steps) {
        if (Status ran = runStep(step); !ran.ok()) return ran.error().withContext(step.label);
      }
      return Status::success();
    });
    if (!work.ok()) {
      logger().warn("{}: recording a run for replays failed; launching step by step: {}", device->id(),
                    work.error().message());
      replayOff = true;
      return false;
    }
    if (!*work) {
      replayOff = true;  // the device cannot record
      return false;
    }
    if (recordings.size() == kKeptRecordings) recordings.erase(recordings.begin());
    recordings.push_back({runArgs, std::move(*work)});
    match = recordings.end() - 1;
  } else if (match != recordings.end() - 1) {
    std::rotate(match, match + 1, recordings.end());  // the most recently replayed last
    match = recordings.end() - 1;
  }
  SMELT_CHECK_OK(match->work->replay(*stream));
  ++replays;
  return true;
}

bool CompiledGraph::Impl::probeEventTiming() {
  auto start = stream->record(true);
  if (!start.ok()) return false;
  auto end = stream->record(true);
  if (!end.ok() || !(*end)->synchronize().ok()) return false;
  return (*end)->elapsedMsSince(**start).ok();
}

Status CompiledGraph::run(std::span<const Tensor* const> inputs, std::span<const Tensor* const> parameters,
                          std::vector<Tensor>& outputs) {
  Impl& x = *impl_;
  const Graph& g = x.graph;
  SMELT_CHECK_OK(checkPositionalFeeds(g, inputs, parameters));
  const auto& params = g.parameters();
  for (size_t o = 0; o < x.donatedOutputs.size(); ++o) {
    x.donatedNow[o] = x.donatedOutputs[o] && parameters[static_cast<size_t>(x.donatedParameter[o])] != nullptr;
  }
  // Output tensors of the right types, kept across runs when the caller passes the same vector; the
  // ones donated this run land in their parameters' tensors instead.
  Impl::lendFlags(outputs, x.hostFlags, x.callerOutputs());
  prepareOutputs(g, outputs, &x.donatedNow);
  if (x.hostMemory) {
    for (size_t i = 0; i < inputs.size(); ++i) x.inputArgs[i] = hostArg(*inputs[i]);
    for (size_t i = 0; i < params.size(); ++i) {
      x.parameterArgs[i] = hostArg(parameters[i] ? *parameters[i] : params[i]->initialValue());
    }
    for (size_t i = 0; i < outputs.size(); ++i) x.outputArgs[i] = hostArg(outputs[i]);
  } else {
    SMELT_CHECK_OK(x.joinDefaultStream());
    // Feeds go through pinned staging into their slots, each upload enqueued as soon as its staging
    // copy is done.
    for (size_t i = 0; i < inputs.size(); ++i) {
      x.inputArgs[i] = x.slotArg(x.layout.inputSlots[i]);
      SMELT_CHECK_OK(x.staging->copyIn(x.slots.memory(), static_cast<size_t>(x.layout.inputSlots[i]), inputs[i]->raw(),
                                       inputs[i]->byteSize(), *x.stream));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      x.parameterArgs[i] = x.slotArg(x.layout.parameterSlots[i]);
      const Tensor* given = parameters[i];
      if (!given && !x.parameterDirty[i]) continue;  // the slot holds the initial value
      const Tensor& value = given ? *given : params[i]->initialValue();
      SMELT_CHECK_OK(x.staging->copyIn(x.slots.memory(), static_cast<size_t>(x.layout.parameterSlots[i]), value.raw(),
                                       value.byteSize(), *x.stream));
      x.parameterDirty[i] = given != nullptr;
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (x.layout.outputSlots[i] >= 0) x.outputArgs[i] = x.slotArg(x.layout.outputSlots[i]);
    }
  }
  if (Status done = x.execute(); !done.ok()) return done.error().withContext(fmt::format("running @{}", g.name()));
  // Outputs no kernel wrote in place: inputs, parameters and constants returned as they are, values
  // returned under a second name, and donated ones whose parameter was not fed.
  for (size_t i = 0; i < outputs.size(); ++i) {
    int64_t p = x.donatedParameter[i];
    if (p >= 0) x.parameterDirty[static_cast<size_t>(p)] = true;
    if (x.donatedNow[i]) continue;
    const Binding& source = x.outputSource[i];
    if (x.hostMemory) {
      if (source == Binding{Binding::kOutput, static_cast<int64_t>(i)} || outputs[i].byteSize() == 0) continue;
      std::memcpy(outputs[i].raw(), pointerOf(x.resolve(source, 1)), outputs[i].byteSize());
    }
  }
  if (x.hostMemory) return x.takeFlags(outputs);
  // Everything back through pinned staging with one wait: the outputs, and the donated parameters
  // into the caller's tensors.
  x.fetches.clear();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (x.donatedNow[i]) {
      auto p = static_cast<size_t>(x.donatedParameter[i]);
      Tensor& into = const_cast<Tensor&>(*parameters[p]);
      x.fetches.push_back(
          {into.raw(), x.slots.memory(), static_cast<size_t>(x.layout.parameterSlots[p]), into.byteSize()});
      continue;
    }
    KernelBufferArg from = x.resolve(x.outputSource[i], 1);
    x.fetches.push_back({outputs[i].raw(), from.memory, static_cast<size_t>(from.byteOffset), outputs[i].byteSize()});
  }
  if (Status fetched = x.staging->copyOut(x.fetches, *x.stream); !fetched.ok()) {
    return fetched.error().withContext(fmt::format("{}: running @{}", x.device->id(), g.name()));
  }
  SMELT_CHECK_OK(x.rejoinDefaultStream());
  // The run has finished (its outputs came back): a collective that failed without the stream saying so is an error.
  if (x.deviceCollectives) {
    if (Status healthy = x.backend->collectivesHealthy(); !healthy.ok()) {
      return healthy.error().withContext(fmt::format("running @{}", g.name()));
    }
  }
  return x.takeFlags(outputs);
}

Status CompiledGraph::run(std::span<const DeviceTensor* const> inputs, std::span<const DeviceTensor* const> parameters,
                          std::vector<DeviceTensor>& outputs) {
  Impl& x = *impl_;
  const Graph& g = x.graph;
  SMELT_CHECK_OK(checkPositionalFeeds(g, inputs, parameters));
  const auto& params = g.parameters();
  auto here = [&](const DeviceTensor& t, const Value* v) -> Status {
    if (t.devicePtr() != x.device) {
      return makeError("feed '{}' lives on {}, this executable on {}", v->name(), t.device().id(), x.device->id());
    }
    return Status::success();
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    SMELT_CHECK_OK(here(*inputs[i], g.inputs()[i]));
    x.inputArgs[i] = deviceArg(*inputs[i]);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (parameters[i]) {
      SMELT_CHECK_OK(here(*parameters[i], params[i]));
      x.parameterArgs[i] = deviceArg(*parameters[i]);
    } else if (x.hostMemory) {
      x.parameterArgs[i] = hostArg(params[i]->initialValue());
    } else {
      x.parameterArgs[i] = x.slotArg(x.layout.parameterSlots[i]);
      if (x.parameterDirty[i]) {
        const Tensor& value = params[i]->initialValue();
        SMELT_CHECK_OK(x.device->copyIn(x.slots.memory(), static_cast<size_t>(x.layout.parameterSlots[i]), value.raw(),
                                        value.byteSize(), x.device->defaultStream()));
        x.parameterDirty[i] = false;
      }
    }
  }
  // Outputs: the caller's tensors where nothing else shares them, else fresh ones from the pool; a
  // donated output is its fed parameter's tensor, which the run overwrites.
  Impl::lendFlags(outputs, x.deviceFlags, x.callerOutputs());
  outputs.resize(g.outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    int64_t p = x.donatedParameter[i];
    x.donatedNow[i] = p >= 0 && parameters[static_cast<size_t>(p)] != nullptr;
    if (x.donatedNow[i]) {
      outputs[i] = *parameters[static_cast<size_t>(p)];
      continue;
    }
    const TensorType& type = g.outputs()[i].value->type();
    if (!outputs[i].defined() || !(outputs[i].type() == type) || outputs[i].devicePtr() != x.device || !outputs[i].unique()) {
      SMELT_TRY(outputs[i], DeviceTensor::toOverwrite(x.device, type));
    }
    x.outputArgs[i] = deviceArg(outputs[i]);
  }
  // After the pool's fills above (on the default stream), and after uploads on other streams.
  SMELT_CHECK_OK(x.joinDefaultStream());
  for (const DeviceTensor* t : inputs) SMELT_CHECK_OK(t->waitUntilReady(*x.stream));
  for (const DeviceTensor* t : parameters) {
    if (t) SMELT_CHECK_OK(t->waitUntilReady(*x.stream));
  }
  if (Status done = x.execute(); !done.ok()) return done.error().withContext(fmt::format("running @{}", g.name()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    int64_t p = x.donatedParameter[i];
    if (p >= 0 && !x.hostMemory && !parameters[static_cast<size_t>(p)]) x.parameterDirty[static_cast<size_t>(p)] = true;
    if (x.donatedNow[i]) continue;
    const Binding& source = x.outputSource[i];
    if (source == Binding{Binding::kOutput, static_cast<int64_t>(i)}) continue;
    KernelBufferArg from = x.resolve(source, 1);
    SMELT_CHECK_OK(x.device->copy(outputs[i].memory(), 0, from.memory, static_cast<size_t>(from.byteOffset),
                                  outputs[i].byteSize(), *x.stream));
  }
  // The kernels may still be running: the default stream follows this run, so the outputs' next
  // users (toHost(), other executables) wait for it on the device (unless index checks wait now).
  SMELT_CHECK_OK(x.rejoinDefaultStream());
  return x.takeFlags(outputs);
}

Status CompiledGraph::Impl::raisedCheck(std::span<const Tensor> flags) const {
  for (size_t k = 0; k < flags.size(); ++k) {
    if (flags[k].getInt(0) != 0) {
      return indexCheckError(indexChecks[k]).withContext(fmt::format("running @{}", graph.name()));
    }
  }
  return Status::success();
}

Status CompiledGraph::Impl::takeFlags(std::vector<Tensor>& outputs) {
  if (indexChecks.empty()) return Status::success();
  const size_t first = callerOutputs();
  Status raised = raisedCheck(std::span<const Tensor>(outputs).subspan(first));
  for (size_t k = first; k < outputs.size(); ++k) hostFlags.push_back(std::move(outputs[k]));
  outputs.resize(first);
  return raised;
}

Status CompiledGraph::Impl::takeFlags(std::vector<DeviceTensor>& outputs) {
  if (indexChecks.empty()) return Status::success();
  const size_t first = callerOutputs();
  if (flagValues.size() != indexChecks.size()) {
    flagValues.clear();
    for (size_t k = first; k < graph.outputs().size(); ++k) flagValues.emplace_back(graph.outputs()[k].value->type());
  }
  for (size_t k = 0; k < indexChecks.size(); ++k) {
    SMELT_CHECK_OK(outputs[first + k].toHost(flagValues[k]));  // waits for the run
    deviceFlags.push_back(std::move(outputs[first + k]));
  }
  outputs.resize(first);
  return raisedCheck(flagValues);
}

}  // namespace smelt

// Uses the installed package the way an application would: builds a model, trains it a few steps,
// checkpoints it, and runs a graph parsed from IR text on the compiled path.
#include <smelt/smelt.h>

#include <cstdio>

int main() {
  using namespace smelt;
  nn::Model model(nn::sequential({nn::linear(3, 8), nn::relu(), nn::linear(8, 2)}), 1);
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.1}), TensorType{DType::f32, {4, 3}},
                                    TensorType{DType::i64, {4}});
  if (!step.ok()) return std::printf("create: %s\n", step.error().message().c_str()), 1;
  Tensor x = Tensor::of<float>({4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  Tensor y = Tensor::of<int64_t>({4}, {0, 1, 0, 1});
  double first = 0, last = 0;
  for (int i = 0; i < 50; ++i) {
    auto loss = (*step)->run(x, y);
    if (!loss.ok()) return std::printf("run: %s\n", loss.error().message().c_str()), 1;
    (i == 0 ? first : last) = *loss;
  }
  if (!nn::saveSafetensors("consumer.safetensors", model.state).ok()) return 1;
  auto graph = parseGraph("graph @g(%a: f32[2]) {\n  %0 = mul(%a, %a) : f32[2]\n  return y = %0\n}");
  if (!graph.ok()) return std::printf("parse: %s\n", graph.error().message().c_str()), 1;
  auto exe = Executable::compile(*graph);
  if (!exe.ok()) return 1;
  auto out = (*exe)->run({{"a", Tensor::of<float>({2}, {3, 4})}});
  if (!out.ok() || (*out)[0].getDouble(1) != 16) return 1;
  // The device runtime: the devices there are, a device-resident run, and placement.
  std::vector<DeviceDescription> devices = listDevices();
  auto cpu = openDevice("cpu");
  if (!cpu.ok() || devices.empty()) return std::printf("devices: none\n"), 1;
  auto a = DeviceTensor::fromHost(*cpu, Tensor::of<float>({2}, {5, 6}));
  if (!a.ok()) return 1;
  std::vector<DeviceTensor> resident;
  if (!(*exe)->run(DeviceTensorMap{{"a", *a}}, resident).ok()) return std::printf("resident run failed\n"), 1;
  auto back = resident[0].toHost();
  if (!back.ok() || back->getDouble(1) != 36) return 1;
  PlacementDecision where = choosePlacement(*graph);
  std::printf("consumer: loss %.4f -> %.4f, a*a = [%g, %g], %zu devices, placed on %s\n", first, last,
              (*out)[0].getDouble(0), (*out)[0].getDouble(1), devices.size(), where.deviceId.c_str());
  return last < first ? 0 : 1;
}

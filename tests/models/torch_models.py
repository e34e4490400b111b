"""The PyTorch models the model checks export to ONNX (shared by check_torch_models.py and
check_torch_gradients.py): an MLP, a small CNN with batch norm, a transformer block with layer norm,
torchvision's resnet18, a small segmentation net (Resize in its bilinear, nearest and bicubic forms),
a recurrent net (a two-layer bidirectional LSTM into a GRU) and a volumetric net (3-D convolution,
transposed convolution and pooling). Each builder returns (name, model,
example input, ONNX opset)."""
import torch, torch.nn as nn, torch.nn.functional as F


def mlp():
    return "mlp", nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 5)), \
        torch.randn(8, 20), 14


def cnn():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), nn.BatchNorm2d(16), nn.GELU(),
                          nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16 * 2 * 2, 10), nn.LogSoftmax(dim=1))
    # Non-trivial running statistics and affine parameters, so batch norm's inference form is exercised.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return "cnn", model, torch.randn(4, 3, 16, 16), 14


class Attention(nn.Module):
    """One pre-norm transformer block: layer norm, single-head attention, residual, layer norm, MLP."""

    def __init__(self, d=16):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.scale = d ** -0.5

    def forward(self, x):
        h = self.norm1(x)
        att = torch.softmax(self.q(h) @ self.k(h).transpose(1, 2) * self.scale, dim=-1)
        x = x + self.o(att @ self.v(h))
        return x + self.ff2(F.gelu(self.ff1(self.norm2(x))))


def attention():
    # Opset 17 exports nn.LayerNorm as LayerNormalization.
    return "attention", Attention(), torch.randn(2, 6, 16), 17


def resnet18():
    import torchvision  # Debian's python3-torchvision
    return "resnet18", torchvision.models.resnet18(weights=None), torch.randn(2, 3, 64, 64), 14


class Segmentation(nn.Module):
    """An encoder-decoder with a skip connection, upsampled as segmentation heads do (F.interpolate)."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.c3, self.out = nn.Conv2d(16, 8, 3, padding=1), nn.Conv2d(8, 4, 1)

    def forward(self, x):
        a = F.relu(self.c1(x))
        b = F.relu(self.c2(a))
        c = F.relu(self.c3(F.interpolate(b, scale_factor=2, mode="bilinear", align_corners=False))) + a
        logits = self.out(c)
        return F.interpolate(logits, size=(20, 12), mode="nearest") + \
            F.interpolate(logits, size=(20, 12), mode="bicubic", align_corners=True)


def segmentation():
    return "segmentation", Segmentation(), torch.randn(2, 3, 16, 16), 14


class Recurrent(nn.Module):
    """A two-layer bidirectional LSTM into a GRU and a linear head over every step (batch first)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(16, 5, batch_first=True)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        z, h = self.gru(y)
        return self.head(z + h[-1].unsqueeze(1))


def recurrent():
    return "recurrent", Recurrent(), torch.randn(3, 7, 6), 14


def volume():
    model = nn.Sequential(nn.Conv3d(2, 4, 3, stride=(1, 2, 2), padding=1), nn.ReLU(),
                          nn.MaxPool3d(2, ceil_mode=True),
                          nn.ConvTranspose3d(4, 3, 3, stride=2, padding=1, output_padding=1), nn.Tanh(),
                          nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), nn.Conv3d(3, 2, (2, 1, 3), dilation=(2, 1, 1)))
    return "volume", model, torch.randn(2, 2, 9, 12, 13), 14


def all_models(seed):
    torch.manual_seed(seed)
    for build in (mlp, cnn, attention, resnet18, segmentation, recurrent, volume):
        yield build()

"""Small PyTorch models for the bridge tests and benchmarks: ResNet-style CNN, GPT-2-style
transformer, MLP, LSTM."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, width=8, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(Block(width, width, 1), Block(width, 2 * width, 2))
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(x.mean((2, 3)))


class GPTBlock(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=64, d=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.Sequential(*[GPTBlock(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        return self.head(self.ln(self.blocks(x)))


class MLP(nn.Module):
    def __init__(self, d_in=32, hidden=64, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


class LSTMModel(nn.Module):
    def __init__(self, d_in=8, hidden=16, classes=4):
        super().__init__()
        self.lstm = nn.LSTM(d_in, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


def make(name: str, seed: int = 0):
    """(model, example input, loss function of the output) for a model name."""
    torch.manual_seed(seed)
    if name == "resnet":
        return ResNet(), torch.randn(4, 3, 16, 16), lambda y: F.cross_entropy(y, torch.arange(4) % 10)
    if name == "gpt":
        return GPT(), torch.randint(0, 64, (2, 16)), lambda y: F.cross_entropy(y.reshape(-1, 64), torch.arange(32) % 64)
    if name == "mlp":
        return MLP(), torch.randn(16, 32), lambda y: F.cross_entropy(y, torch.arange(16) % 10)
    if name == "lstm":
        return LSTMModel(), torch.randn(4, 6, 8), lambda y: F.mse_loss(y, torch.ones_like(y))
    raise ValueError(name)


NAMES = ("resnet", "gpt", "mlp", "lstm")

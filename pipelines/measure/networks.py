"""ShuffleNetV2 (1x) and ResNet-50, defined here so the harness needs no torchvision.

This module imports torch at import time: import it only inside functions that need it.
Shapes are (batch, channels, height, width).

- ShuffleNetV2 1x (Ma et al., ECCV 2018): a 24-channel stem, three stages of 4 / 8 / 4 units
  (116 / 232 / 464 channels, the first unit of each halving the resolution), a 1x1 conv to 1024
  channels, global average pooling, a linear classifier. A unit splits the channels in two, sends
  one half through 1x1 conv - 3x3 depthwise conv - 1x1 conv (the downsampling unit sends the whole
  input through that branch and through a depthwise + 1x1 shortcut), concatenates and shuffles.
  ``stem="imagenet"``: 3x3 stride-2 conv + 3x3 stride-2 max-pool (224x224 input; the same
  parameters as torchvision's shufflenet_v2_x1_0). ``stem="cifar"``: 3x3 stride-1 conv, no
  pooling (32x32 input), as in the CIFAR-100 implementation the Zeus traces were measured with.
- ResNet-50 (He et al., CVPR 2016, v1.5 as in torchvision: stride on the 3x3 conv): 7x7 stride-2
  stem + max-pool, bottleneck stages of 3 / 4 / 6 / 3 blocks (widths 64-512, expansion 4),
  global average pooling, linear classifier; 25,557,032 parameters for 1000 classes.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, *, groups: int = 1, relu: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).reshape(b, c, h, w)


class ShuffleUnit(nn.Module):
    """One ShuffleNetV2 unit: ``stride=1`` keeps shape (cin == cout), ``stride=2`` halves H, W."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        if stride == 1 and cin != cout:
            raise ValueError("a stride-1 unit keeps its channel count")
        self.stride = stride
        half = cout // 2
        branch_in = cin if stride == 2 else half
        self.shortcut = (
            nn.Sequential(_conv_bn(cin, cin, 3, stride, groups=cin, relu=False), _conv_bn(cin, half, 1))
            if stride == 2
            else nn.Identity()
        )
        self.branch = nn.Sequential(
            _conv_bn(branch_in, half, 1),
            _conv_bn(half, half, 3, stride, groups=half, relu=False),
            _conv_bn(half, half, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            keep, x = x.chunk(2, dim=1)
            out = torch.cat((keep, self.branch(x)), dim=1)
        else:
            out = torch.cat((self.shortcut(x), self.branch(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, num_classes: int, stem: Literal["cifar", "imagenet"] = "cifar") -> None:
        super().__init__()
        widths, repeats = (24, 116, 232, 464), (4, 8, 4)
        if stem == "cifar":
            self.stem: nn.Module = _conv_bn(3, widths[0], 3, 1)
        else:
            self.stem = nn.Sequential(_conv_bn(3, widths[0], 3, 2), nn.MaxPool2d(3, 2, 1))
        stages: list[nn.Module] = []
        for cin, cout, n in zip(widths[:-1], widths[1:], repeats, strict=True):
            stages.append(nn.Sequential(ShuffleUnit(cin, cout, 2), *[ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]))
        self.stages = nn.Sequential(*stages)
        self.head = _conv_bn(widths[-1], 1024, 1)
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.stages(self.stem(x)))
        return self.fc(x.mean(dim=(2, 3)))


class Bottleneck(nn.Module):
    """1x1 reduce - 3x3 (stride here) - 1x1 expand (x4), plus the identity or a projected shortcut."""

    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(
            _conv_bn(cin, width, 1),
            _conv_bn(width, width, 3, stride),
            _conv_bn(width, cout, 1, relu=False),
        )
        self.shortcut = _conv_bn(cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout else nn.Identity()
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


class ResNet50(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(_conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        layers: list[nn.Module] = []
        cin = 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * Bottleneck.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.layers(self.stem(x)).mean(dim=(2, 3)))


def build_network(network: str, num_classes: int) -> nn.Module:
    """The network of a Zeus workload by its trace name (``shufflenetv2``, ``resnet50``)."""
    if network == "shufflenetv2":
        return ShuffleNetV2(num_classes, stem="cifar")
    if network == "resnet50":
        return ResNet50(num_classes)
    raise ValueError(f"unknown network {network!r}: expected shufflenetv2 or resnet50")

"""Megatron-core tensor parallelism (size 2) as CUDA training code writes it: torchrun, the
device from torch.cuda.is_available(), the NCCL group, initialize_model_parallel, and a
column-parallel / row-parallel MLP whose shards are cut from one full MLP. After a few SGD steps
on a fixed batch, each rank's shards are gathered and compared with the same full MLP trained on
the CPU in this process. Megatron's StragglerDetector times the steps and reports (its tensors go
on the device the backend name picks). Rank 0 prints one JSON line."""

import json
import os

import torch
import torch.distributed as dist

D_IN, D_HID, D_OUT, STEPS, LR = 8, 32, 4, 5, 0.1


def full_mlp():
    torch.manual_seed(99)
    layers = [torch.nn.Linear(D_IN, D_HID), torch.nn.GELU(), torch.nn.Linear(D_HID, D_OUT)]
    return torch.nn.Sequential(*layers)


def batch():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(24, D_IN, generator=g)
    return x, torch.cos(x[:, :D_OUT] * 2)


def cpu_reference():
    net = full_mlp()
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    x, y = batch()
    losses = []
    for _ in range(STEPS):
        loss = torch.nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return net, losses


def main():
    from megatron.core import ModelParallelConfig, parallel_state
    from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed

    device = "cuda" if torch.cuda.is_available() else "cpu"
    local = int(os.environ.get("LOCAL_RANK", 0))
    if device == "cuda":
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if device == "cuda" else "gloo")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=2)
    model_parallel_cuda_manual_seed(1234)
    tp_rank = parallel_state.get_tensor_model_parallel_rank()
    tp = parallel_state.get_tensor_model_parallel_world_size()

    config = ModelParallelConfig(tensor_model_parallel_size=2)

    def keep(weight):  # the shards are cut from the full MLP below
        return None

    fc1 = ColumnParallelLinear(
        D_IN, D_HID, config=config, init_method=keep, bias=True, gather_output=False
    )
    fc2 = RowParallelLinear(
        D_HID,
        D_OUT,
        config=config,
        init_method=keep,
        bias=True,
        input_is_parallel=True,
        skip_bias_add=False,
    )
    ref = full_mlp()
    rows = slice(tp_rank * D_HID // tp, (tp_rank + 1) * D_HID // tp)
    with torch.no_grad():
        fc1.weight.copy_(ref[0].weight[rows])
        fc1.bias.copy_(ref[0].bias[rows])
        fc2.weight.copy_(ref[2].weight[:, rows])
        fc2.bias.copy_(ref[2].bias)
    params = [fc1.weight, fc1.bias, fc2.weight, fc2.bias]
    opt = torch.optim.SGD(params, lr=LR)
    x, y = batch()
    x, y = x.to(device), y.to(device)
    from megatron.core.utils import StragglerDetector

    stimer = StragglerDetector()
    port = int(os.environ["MASTER_PORT"]) + 1  # its controller's (rank 0); taken: a warning
    stimer.configure(dist.get_world_size(), dist.get_rank(), port=port, enabled=True)
    losses = []
    for _ in range(STEPS):
        with stimer:
            hidden, _ = fc1(x)
            out, _ = fc2(torch.nn.functional.gelu(hidden))
            loss = torch.nn.functional.mse_loss(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    straggler = [stimer.report(total_flops=1e9, log_interval=STEPS), str(stimer.dev)]

    group = parallel_state.get_tensor_model_parallel_group()

    def gather(t, dim):
        parts = [torch.empty_like(t) for _ in range(tp)]
        dist.all_gather(parts, t.detach().contiguous(), group=group)
        return torch.cat(parts, dim=dim).cpu()

    trained = {
        "0.weight": gather(fc1.weight, 0),
        "0.bias": gather(fc1.bias, 0),
        "2.weight": gather(fc2.weight, 1),
        "2.bias": fc2.bias.detach().cpu(),
    }
    if dist.get_rank() == 0:
        cpu_net, cpu_losses = cpu_reference()
        reference = cpu_net.state_dict()
        print(
            json.dumps(
                {
                    "is_available": torch.cuda.is_available(),
                    "tp": tp,
                    "backend": dist.get_backend(),
                    "straggler": straggler,
                    "weight_device": str(fc1.weight.device),
                    "output_device": str(out.device),
                    "losses": losses,
                    "cpu_losses": cpu_losses,
                    "max_weight_diff_vs_cpu": max(
                        (trained[k] - reference[k]).abs().max().item() for k in reference
                    ),
                }
            )
        )
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

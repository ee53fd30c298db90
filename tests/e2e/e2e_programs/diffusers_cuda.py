"""A diffusers program written for NVIDIA GPUs: a small DDPM pipeline built from a config, seeded
with torch.Generator("cuda"), run on "cuda" and again with enable_model_cpu_offload(). Prints one
JSON line with both images and the same seed's images on a second run."""

import json

import torch
from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

torch.manual_seed(0)
unet = UNet2DModel(
    sample_size=8,
    in_channels=3,
    out_channels=3,
    layers_per_block=1,
    block_out_channels=(16, 32),
    down_block_types=("DownBlock2D", "DownBlock2D"),
    up_block_types=("UpBlock2D", "UpBlock2D"),
    norm_num_groups=8,
)
pipe = DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=10))


def sample(seed):
    generator = torch.Generator("cuda").manual_seed(seed)
    out = pipe(batch_size=2, generator=generator, num_inference_steps=10, output_type="np")
    return out.images


pipe.to("cuda")
on_gpu = sample(1)
again = sample(1)
other = sample(2)
unet_device = str(pipe.unet.device)

pipe.to("cpu")
pipe.enable_model_cpu_offload()
offloaded = sample(1)

print(
    json.dumps(
        {
            "unet_device": unet_device,
            "execution_device": str(pipe._execution_device),
            "unet_device_after_offload": str(pipe.unet.device),
            "shape": list(on_gpu.shape),
            "repeat_diff": float(abs(on_gpu - again).max()),
            "other_seed_diff": float(abs(on_gpu - other).max()),
            "offload_diff": float(abs(on_gpu - offloaded).max()),
            "generator_device": str(torch.Generator("cuda").device),
        }
    )
)

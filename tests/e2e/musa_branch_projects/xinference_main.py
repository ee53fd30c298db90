import json

from xinference import device_utils

calls = [
    [
        device_utils.get_available_device(),
        device_utils.get_available_device_env_name(),
        device_utils.gpu_count(),
    ]
    for _ in range(3)
]
print(json.dumps({"calls": calls, "gpu_info": device_utils.get_gpu_info()}))

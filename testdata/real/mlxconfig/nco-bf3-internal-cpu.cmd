["mlxconfig", "-d", "0000:3b:00.0", "-e", "query", "INTERNAL_CPU_OFFLOAD_ENGINE"]

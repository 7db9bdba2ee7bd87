["mstconfig", "-d", "mlx5_0", "q"]

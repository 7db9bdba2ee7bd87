["dcb", "pfc", "show", "dev", "eth0"]

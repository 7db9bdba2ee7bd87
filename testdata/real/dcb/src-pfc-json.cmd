["dcb", "-j", "pfc", "show", "dev", "eth0"]

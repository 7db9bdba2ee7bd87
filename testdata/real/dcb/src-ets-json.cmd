["dcb", "-j", "ets", "show", "dev", "eth0"]

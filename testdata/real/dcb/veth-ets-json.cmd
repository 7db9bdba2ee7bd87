["dcb", "-j", "ets", "show", "dev", "v0"]

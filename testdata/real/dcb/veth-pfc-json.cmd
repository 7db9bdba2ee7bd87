["dcb", "-j", "pfc", "show", "dev", "v0"]

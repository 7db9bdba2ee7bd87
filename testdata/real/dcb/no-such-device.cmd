["dcb", "-j", "pfc", "show", "dev", "rf-none"]

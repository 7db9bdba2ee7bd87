["dcb", "-j", "dcbx", "show", "dev", "v0"]

["dcb", "-j", "dcbx", "show", "dev", "eth0"]

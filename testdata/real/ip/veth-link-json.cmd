["ip", "-j", "link", "show", "dev", "v0"]

["ip", "-j", "link", "show", "dev", "rf-none"]

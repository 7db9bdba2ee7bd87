["ip", "-j", "link", "show", "dev", "ib0"]

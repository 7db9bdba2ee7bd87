["ip", "-j", "link", "show", "dev", "ens1f0np0"]

["mstfwreset","-v"]

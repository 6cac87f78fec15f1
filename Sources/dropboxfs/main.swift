print("dropboxfs")

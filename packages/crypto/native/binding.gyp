{
  "targets": [
    {
      "target_name": "aead",
      "sources": ["aead.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}

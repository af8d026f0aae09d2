"""The reliability suite: crashes, corruption, Ollama faults, hostile input, a second
instance, a full disk, fuzzing (issue 7). Cases over a minute are marked `slow`."""

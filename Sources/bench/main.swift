// swiftrtc-bench: speed and memory measurements reported as ratios against peers measured in the same run.
print("bench")

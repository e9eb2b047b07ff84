# Ultralytics 8.4.117's own resample_segments and segment2box on fixed polygons: yolotrain's reference
# for data::resample_segment and data::segment_box (tests/unit/data/segments_test.cpp). Run with
# Ultralytics 8.4.117 importable (as scripts/ultralytics84_loss.py; docs/data.md, "Augmentations"):
#   python3 scripts/ultralytics84_segments.py tests/unit/data/data/ultralytics84_segments.json
import json, math, sys

import numpy as np
from ultralytics.utils.ops import resample_segments, segment2box

out = sys.argv[1]
ellipse = [[0.5 + 0.3 * math.cos(2 * math.pi * k / 37), 0.4 + 0.2 * math.sin(2 * math.pi * k / 37)] for k in range(37)]
big = [[0.5 + 0.45 * math.cos(2 * math.pi * k / 1500), 0.5 + 0.45 * math.sin(2 * math.pi * k / 1500)] for k in range(1500)]
polygons = {"triangle": [[0.1, 0.1], [0.9, 0.2], [0.3, 0.8]], "ellipse37": ellipse,
            "square999": [[0.2 + 0.6 * k / 249, 0.2] for k in range(250)] + [[0.8, 0.2 + 0.6 * k / 250] for k in range(250)]
            + [[0.8 - 0.6 * k / 250, 0.8] for k in range(250)] + [[0.2, 0.8 - 0.6 * k / 249] for k in range(249)],
            "circle1500": big}
result = {"ultralytics": "8.4.117", "resample": {}}
for name, p in polygons.items():
    s = np.array(p, dtype=np.float32)
    r = resample_segments([s.copy()], n=1000)[0]
    result["resample"][name] = {"in": s.reshape(-1).tolist(), "out": r.reshape(-1).tolist(), "dtype": str(r.dtype)}
# segment2box in float64 (as after RandomPerspective's transform), image 100 x 80.
boxes = {"inside": [[10, 10], [90, 20], [40, 70]],
         "crosses_right": [[60, 10], [130, 40], [60, 70]],
         "around_corner": [[-20, -20], [40, -10], [30, 30], [-10, 40]],
         "covers_image": [[-50, -50], [150, -50], [150, 130], [-50, 130]],
         "outside": [[120, 10], [150, 10], [140, 50]],
         "thin_crossing": [[-10, 39.5], [110, 40.5], [110, 41.5], [-10, 40.5]]}
result["segment2box"] = {name: {"in": np.array(p, dtype=np.float64).reshape(-1).tolist(),
                                 "box": segment2box(np.array(p, dtype=np.float64), 100, 80).tolist()}
                         for name, p in boxes.items()}
json.dump(result, open(out, "w"))
print({k: v["box"] for k, v in result["segment2box"].items()})

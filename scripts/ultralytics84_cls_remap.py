# Ultralytics 8.4.117's class-row remapping when fine-tuning (cls_remap=True, the default): the model
# a trainer builds for data whose class names are a reordered subset of a checkpoint's, loaded as its
# SegmentationTrainer / DetectionTrainer get_model does (set_model_names_for_load, then
# BaseModel.load -> _remap_cls_by_names, intersect_dicts), and every class-logit tensor of the head
# (cv3.i.<last> and one2one_cv3.i.<last>) written out with the "Transferred" count: the biases (the
# weights are remapped only where the head's c3 width is the same for both nc; otherwise they keep
# the new model's random init, and none is written):
# yolotrain's reference for the same loading (tests/unit/io/class_remap_test.cpp).
# Run with Ultralytics 8.4.117 importable (../shared/tools/ultralytics84/README.md):
#   python3 scripts/ultralytics84_cls_remap.py ../shared/weights/ultralytics/coco128seg_yolov8n-seg/best.pt \
#       dog,person,car tests/unit/io/data/ultralytics84_cls_remap_yolov8n-seg.json
#   python3 scripts/ultralytics84_cls_remap.py ../shared/weights/ultralytics/bccd_yolo11n/best.pt \
#       Platelets,rbc,WBC tests/unit/io/data/ultralytics84_cls_remap_bccd_yolo11n.json
import hashlib, json, sys
import torch
from ultralytics.nn.tasks import DetectionModel, SegmentationModel, load_checkpoint
from ultralytics.utils import LOGGER

pt, names, out = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
source, _ = load_checkpoint(pt)
torch.manual_seed(0)
cls = SegmentationModel if isinstance(source, SegmentationModel) else DetectionModel
model = cls(source.yaml, nc=len(names), verbose=False)
model.names = dict(enumerate(names))  # DetectionTrainer.set_model_names_for_load
lines = []
LOGGER.info = lambda msg, *a, **k: lines.append(str(msg))
model.load(source)
sd = model.state_dict()
keys = sorted(k for k in sd if (".cv3." in k or ".one2one_cv3." in k) and sd[k].shape[:1] == (len(names),)
              and k.split(".")[-2].isdigit() and k.endswith(".bias"))
weights = [k.replace(".bias", ".weight") for k in keys]
same_width = [w for w in weights if source.state_dict()[w].shape[1:] == sd[w].shape[1:]]
result = {"ultralytics": "8.4.117", "checkpoint_sha256": hashlib.sha256(open(pt, "rb").read()).hexdigest(),
          "names": names, "log": lines, "weights_remapped": same_width,
          "tensors": {k: sd[k].flatten().tolist() for k in keys + same_width}}
json.dump(result, open(out, "w"), indent=1)
print("\n".join(lines))
print(len(keys), "class-logit tensors:", ", ".join(keys))

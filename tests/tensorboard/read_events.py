#!/usr/bin/python3
"""Reads a TensorBoard event file without sharing any code with yolotrain's writer.

The TFRecord framing (uint64 length, masked CRC32C of the length, the data, masked CRC32C of
the data) is checked with python3-crc32c; the Event messages are decoded from the protobuf wire
format by hand, with TensorBoard's published field numbers (tensorflow/core/util/event.proto,
tensorflow/core/framework/summary.proto). Prints one JSON object:
  {"records": N, "file_version": "...", "scalars": {tag: [[step, value], ...]},
   "images": {tag: [{"step", "height", "width", "colorspace", "format", "decoded_width", "decoded_height"}]}}
Exits 1 with a message on a bad CRC, a torn record or a malformed message.

Usage: read_events.py EVENT_FILE
"""
import json
import struct
import sys

import crc32c


def masked(data):
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob):
    at = 0
    while at < len(blob):
        if len(blob) - at < 12:
            raise ValueError(f"torn record header at byte {at}")
        header = blob[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (crc,) = struct.unpack("<I", blob[at + 8:at + 12])
        if crc != masked(header):
            raise ValueError(f"length CRC mismatch at byte {at}")
        data = blob[at + 12:at + 12 + length]
        if len(data) != length or len(blob) < at + 16 + length:
            raise ValueError(f"torn record at byte {at}")
        (crc,) = struct.unpack("<I", blob[at + 12 + length:at + 16 + length])
        if crc != masked(data):
            raise ValueError(f"data CRC mismatch at byte {at}")
        yield data
        at += 16 + length


def varint(buf, at):
    shift = value = 0
    while True:
        b = buf[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, at
        shift += 7


def fields(buf):
    """(field number, wire type, value) of a message: ints for varints, bytes for the rest."""
    at = 0
    while at < len(buf):
        key, at = varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(buf, at)
        elif wire == 1:
            value, at = buf[at:at + 8], at + 8
        elif wire == 2:
            n, at = varint(buf, at)
            value, at = buf[at:at + n], at + n
        elif wire == 5:
            value, at = buf[at:at + 4], at + 4
        else:
            raise ValueError(f"wire type {wire} not expected")
        yield number, wire, value


def picture_size(data):
    """(format, width, height) read from a PNG's IHDR or a JPEG's SOF marker."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        width, height = struct.unpack(">II", data[16:24])
        return "png", width, height
    if data[:2] == b"\xff\xd8":
        at = 2
        while at < len(data):
            marker, size = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                height, width = struct.unpack(">HH", data[at + 5:at + 9])
                return "jpeg", width, height
            at += 2 + size
    raise ValueError("image is neither PNG nor JPEG")


def main(path):
    out = {"records": 0, "file_version": None, "scalars": {}, "images": {}}
    with open(path, "rb") as f:
        blob = f.read()
    for record in records(blob):
        out["records"] += 1
        step, wall_time, summary = 0, None, None
        for number, wire, value in fields(record):
            if number == 1 and wire == 1:
                (wall_time,) = struct.unpack("<d", value)
            elif number == 2 and wire == 0:
                step = value
            elif number == 3 and wire == 2:
                out["file_version"] = value.decode()
            elif number == 5 and wire == 2:
                summary = value
        if wall_time is None:
            raise ValueError(f"record {out['records']}: no wall_time")
        if summary is None:
            continue
        for number, wire, value in fields(summary):
            if number != 1:
                continue
            tag, simple, image = None, None, None
            for n, w, v in fields(value):
                if n == 1:
                    tag = v.decode()
                elif n == 2 and w == 5:
                    (simple,) = struct.unpack("<f", v)
                elif n == 4:
                    image = {k: 0 for k in ("height", "width", "colorspace")}
                    for n2, w2, v2 in fields(v):
                        if n2 in (1, 2, 3):
                            image[("height", "width", "colorspace")[n2 - 1]] = v2
                        elif n2 == 4:
                            fmt, dw, dh = picture_size(v2)
                            image.update({"format": fmt, "decoded_width": dw, "decoded_height": dh})
            if simple is not None:
                out["scalars"].setdefault(tag, []).append([step, simple])
            if image is not None:
                image["step"] = step
                out["images"].setdefault(tag, []).append(image)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except (ValueError, IndexError, struct.error) as e:
        print(f"read_events.py: {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(1)

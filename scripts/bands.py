"""What the validation scripts share (serving_validation.py, gemm_check_vidur.py): a group's errors summed
up as its band, and a bands file written the one way."""
import json
import statistics


def band(errors):
    """n, median signed error, median and p90 |error|, range of one group's errors (predicted / measured - 1)."""
    abs_sorted = sorted(abs(e) for e in errors)
    return dict(n=len(errors), median=statistics.median(errors), median_abs=statistics.median(abs_sorted),
                p90_abs=abs_sorted[min(len(errors) - 1, int(0.9 * len(errors)))], low=min(errors), high=max(errors))


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def vanished(now, recorded, path):
    """The groups recorded in `path` that a run no longer has: a check that silently lost rows has checked less."""
    return [f"{key}: in {path}, not in this run (rerun with --write if they were removed on purpose)" for key in recorded if key not in now]


def grown(name, band_now, band_recorded, path, tolerance):
    """What is wrong with a group's band against the one recorded in `path`, or None: not recorded, or its
    median |error| grown by more than `tolerance`."""
    if band_recorded is None:
        return f"{name}: not in {path} (rerun with --write)"
    if band_now["median_abs"] > band_recorded["median_abs"] + tolerance:
        return f"{name}: median |error| {100 * band_now['median_abs']:.1f}% against {100 * band_recorded['median_abs']:.1f}% recorded"
    return None

"""scripts/check_docs.py's check of the prose figures docs/figures.json registers: a sentence
that quotes what the binary gives passes, one that quotes another figure is named with the
binary's, one that is gone is named too. The figures are worked out by hand."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

import check_docs  # noqa: E402

BIN = os.environ.get("RIDGELINE_BIN", "ridgeline")

# A 256 x 4096 x 4096 matmul: 2 * 256 * 4096 * 4096 = 8589934592 FLOPs, 8.59 GFLOP at two
# decimals; its bf16 operands and output, (256*4096 + 4096*4096 + 256*4096) * 2 B =
# 37748736 B, 37.7 MB.
RUN = "op matmul --m 256 --k 4096 --n 4096 --hw h200 --json"


def write(root, doc_text, figures):
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "docs", "a.md"), "w", encoding="utf-8") as f:
        f.write(doc_text)
    with open(os.path.join(root, "docs", "figures.json"), "w", encoding="utf-8") as f:
        json.dump({"figures": figures}, f)


def entry(says, value="flops", scale=1e-9, fmt="{:.2f} GFLOP", **more):
    return dict(doc="docs/a.md", says=says, run=RUN, value=value, scale=scale, format=fmt, **more)


def test_a_sentence_quoting_the_binarys_figures_passes_across_a_line_break(tmp_path, capsys):
    root = str(tmp_path)
    write(root, "The matmul does 8.59\nGFLOP and moves 37.7 MB.\n",
          [entry("does {} and moves"), entry("moves {}.", value="bytes", scale=1e-6, fmt="{:.1f} MB")])
    assert check_docs.check_figures(BIN, root) == (2, 0)
    assert capsys.readouterr().out == ""


def test_a_figure_the_binary_no_longer_gives_is_named_with_the_binarys(tmp_path, capsys):
    root = str(tmp_path)
    write(root, "The matmul does 8.60 GFLOP.\n", [entry("does {}.")])
    assert check_docs.check_figures(BIN, root) == (1, 1)
    out = capsys.readouterr().out
    assert "says 'does 8.60 GFLOP.'" in out and "gives 8.59 GFLOP (flops)" in out


def test_a_sentence_gone_from_the_doc_is_named(tmp_path, capsys):
    root = str(tmp_path)
    write(root, "Nothing about matmuls here.\n", [entry("does {} and moves")])
    assert check_docs.check_figures(BIN, root) == (1, 1)
    assert "no longer says 'does {} and moves' (the binary gives 8.59 GFLOP)" in capsys.readouterr().out


def test_an_error_against_a_published_measurement(tmp_path, capsys):
    root = str(tmp_path)
    # 8589934592 FLOPs against a "measured" 10^10: 0.8589934592 - 1 = -14.1%, -14% at no decimals,
    # which the prose writes with the typographic minus.
    write(root, "The model is \u221214% off.\n",
          [entry("model is {} off", scale=100, fmt="{:+.0f}%", relative_to=1e10)])
    assert check_docs.check_figures(BIN, root) == (1, 0)


def test_a_bad_entry_or_key_is_named(tmp_path, capsys):
    root = str(tmp_path)
    write(root, "The matmul does 8.59 GFLOP.\n",
          [{"doc": "docs/a.md", "says": "no placeholder", "run": RUN, "value": "flops", "format": "{}"},
           entry("does {}.", value="no_such_key")])
    assert check_docs.check_figures(BIN, root) == (2, 2)
    out = capsys.readouterr().out
    assert "entry 1 (docs/a.md): needs doc, says (one '{}')" in out and "entry 2 (docs/a.md):" in out and "has no no_such_key" in out


def test_each_broken_entry_is_one_line_not_a_crash(tmp_path, capsys):
    # A command that fails, a doc that is not there, a format that does not fit the value, a
    # sentence with other braces, an entry that is no object: each named, the others checked.
    root = str(tmp_path)
    write(root, "The matmul does 8.59 GFLOP {sic}.\n",
          [dict(entry("does {}"), run="op matmul --m 0 --json"),
           dict(entry("does {}"), doc="docs/gone.md"),
           entry("does {}", value="bound"),
           entry("does {} {sic}."),
           "not an entry"])
    assert check_docs.check_figures(BIN, root) == (5, 4)
    out = capsys.readouterr().out
    assert "entry 1 (docs/a.md): `ridgeline op matmul --m 0 --json` exits 2:" in out
    assert "entry 2 (docs/gone.md): cannot read docs/gone.md" in out
    assert "entry 3 (docs/a.md): format '{:.2f} GFLOP' of bound" in out
    assert "entry 5 (?): not an object" in out


def test_a_row_picked_by_its_fields(tmp_path, capsys):
    # Llama 3.1 8B's decode LM head at batch 1 reads its 4096 x 128256 bf16 weights and the
    # token's 4096 activations and writes 128256 bf16 logits: (4096 * 128256 + 4096 + 128256)
    # * 2 = 1050937856 B, 1.051 GB. Picked by name and phase, not by its place in the op table;
    # by name alone it is two rows (prefill's and decode's), and the entry says so.
    root = str(tmp_path)
    run = "infer --model llama-3.1-8b --hw h100-sxm --json"
    write(root, "Its LM head streams 1.051 GB a step.\n",
          [dict(doc="docs/a.md", says="streams {} a step", run=run, value="ops[name=lm_head,phase=decode].bytes", scale=1e-9,
                format="{:.3f} GB"),
           dict(doc="docs/a.md", says="streams {} a step", run=run, value="ops[name=lm_head].bytes", scale=1e-9,
                format="{:.3f} GB")])
    assert check_docs.check_figures(BIN, root) == (2, 1)
    assert "entry 2 (docs/a.md): `ridgeline infer --model llama-3.1-8b --hw h100-sxm --json` has no ops[name=lm_head].bytes" in \
        capsys.readouterr().out


def test_a_share_over_another_figure_or_a_sum(tmp_path, capsys):
    # The matmul's 37748736 B over its 8589934592 FLOPs: 1/227.56 = 0.4395%, 0.44% (its
    # intensity's inverse); a share over a key the output lacks is named.
    root = str(tmp_path)
    write(root, "Bytes are 0.44% of the FLOP count, 0.44% of both.\n",
          [entry("Bytes are {} of the FLOP count", value="bytes", over="flops", scale=100, fmt="{:.2f}%"),
           entry("count, {} of both", value="bytes", over="no_such_key", scale=100, fmt="{:.2f}%")])
    assert check_docs.check_figures(BIN, root) == (2, 1)
    assert "has no number at no_such_key to take bytes over" in capsys.readouterr().out

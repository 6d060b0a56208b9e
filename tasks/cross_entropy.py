"""Cross-entropy loss per row: loss[i] = logsumexp(logits[i, :]) - logits[i, target[i]] (= -log softmax), with
a loop over blocks of the vocabulary keeping an online maximum and a rescaled sum of exponentials.
Semantics: torch.nn.functional.cross_entropy(logits, target, reduction="none")."""
import torch

description = (
    "Cross-entropy loss of each row of logits. logits is a row-major f32 matrix of M rows and V columns "
    "(V >= 1, any size: loop over the columns in blocks of BLOCK_V); row i starts at element i * stride "
    "(stride >= V). target is i32[M], each value in [0, V). Write loss[i] = log(sum_j exp(logits[i, j])) - "
    "logits[i, target[i]] into the f32 buffer loss[M], i.e. -log(softmax(logits[i])[target[i]]). The logits are "
    "finite but can be large (|x| up to about 100): subtract the row maximum before exp (keep a running maximum and "
    "rescale the running sum of exponentials when it grows). Launched with one program per row: grid (M,).")
signature = ["logits_ptr: *f32", "target_ptr: *i32", "loss_ptr: *f32 out", "V: i32", "stride: i32",
             "BLOCK_V: constexpr"]
# V = 1 (the loss is 0), V not a multiple of the block, padded rows, one block exactly, large logits.
sizes = [{"m": 1, "v": 1}, {"m": 7, "v": 1000}, {"m": 3, "v": 3001, "pad": 5}, {"m": 4, "v": 256, "shift": 80.0},
         {"m": 2, "v": 17}]
# tolerance: the default for f32 (the order of the additions of exponentials differs from float64's)


def inputs(size, gen):
    m, v = size["m"], size["v"]
    stride = v + size.get("pad", 0)
    x = torch.randn(m, stride, generator=gen) * 4 + size.get("shift", 0.0)
    t = torch.randint(0, v, (m,), generator=gen, dtype=torch.int32)
    return {"logits_ptr": x, "target_ptr": t, "loss_ptr": torch.empty(m), "V": v, "stride": stride}


def reference(args):
    v = args["V"]
    x = args["logits_ptr"][:, :v].double()
    t = args["target_ptr"].long()
    return {"loss_ptr": torch.nn.functional.cross_entropy(x, t, reduction="none")}


def grid(size, meta):
    return (size["m"],)

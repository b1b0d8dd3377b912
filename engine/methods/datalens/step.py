"""One DataLens iteration's teacher side, shared by the trainer and the cost probe.

`teacher_update` is one optimizer step of every teacher on its own partition (real)
against fakes carrying the same labels; `teacher_votes` is every teacher's
TopkStoSignGrad vote on each synthetic record. Both run all N teachers in one batched
pass. Privacy assumption: x_real[i] holds only teacher i's partition (the caller builds
it from the disjoint `partition`), so teacher i's parameters, and hence its vote,
depend on that partition alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.methods.datalens.votes import topk_sto_sign


def teacher_update(teachers, opt, x_real: torch.Tensor, y_real: torch.Tensor, fake: torch.Tensor) -> None:
    """One step of the teachers' GAN loss; x_real/fake (N, m, c, h, w), y_real (N, m).

    The loss is deliberately not returned: it is a statistic of the real partitions and
    is never released (no noise protects it)."""
    m = x_real.shape[1]
    # One pass over real and fake together: the first layer's weight gradient is then one
    # batched matmul instead of two summed ones (~half the backward time at 4,000 teachers).
    logits = teachers(torch.cat([x_real, fake], 1), torch.cat([y_real, y_real], 1))
    loss = F.softplus(-logits[:, :m]).mean(1) + F.softplus(logits[:, m:]).mean(1)
    opt.zero_grad(set_to_none=True)
    loss.sum().backward()  # teachers' losses are independent: sum = per-teacher grads
    opt.step()


def teacher_votes(teachers, x_syn: torch.Tensor, y_syn: torch.Tensor, top_k: int, clip: float,
                  gen: torch.Generator | None, pool: int = 1) -> torch.Tensor:
    """(N, batch, d / pool²) int8 votes: each teacher's k-sparse ±1 vote per synthetic record.

    The vote direction is the descent direction of the non-saturating generator loss
    −log D_i(x) for each synthetic record, averaged over pool×pool pixel blocks. The clip
    is min(max|g|, c) per teacher, as the official code; neither the clip nor the pooling
    changes what a vote is (k entries ±1), so the 2√k sensitivity is unchanged.
    """
    n, batch = teachers.n, x_syn.shape[0]
    x_rep = x_syn.detach().unsqueeze(0).expand(n, *x_syn.shape).clone().requires_grad_()
    g_loss = F.softplus(-teachers(x_rep, y_syn.expand(n, batch))).mean(1).sum()
    (grad,) = torch.autograd.grad(g_loss, x_rep)
    del x_rep, g_loss
    if pool > 1:
        grad = F.avg_pool2d(grad.flatten(0, 1), pool).view(n, batch, -1)
    descent = grad.flatten(2).neg_()  # in place: one (N, batch, d) buffer, not two
    c_eff = torch.clamp(descent.abs().amax(dim=(1, 2), keepdim=True), max=clip, min=1e-30)
    return topk_sto_sign(descent, top_k, c_eff, gen=gen)

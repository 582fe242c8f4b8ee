"""The kernels of one graph partitioned by rows over the processes of a ``torch.distributed``
group (gloo on the CPU, NCCL on GPUs): the partition and its halo exchange
(:mod:`.partition`), LapPE by distributed Lanczos (:mod:`.eigen`), RFP by distributed
propagation and CholeskyQR2 (:mod:`.propagate`), RWSE's random-walk estimate with walks
crossing the partition (:mod:`.walk`) and LCP from the rows of each rank's ball
(:mod:`.curvature`). The single-process kernels are the reference each equals."""

from graphpe.ops.distributed.curvature import distributed_lcp
from graphpe.ops.distributed.eigen import (
    ComponentNullSpace,
    LocalEigenpairs,
    canonical_signs_distributed,
    distributed_laplacian_eigenpairs,
    laplacian_operator,
    null_space,
)
from graphpe.ops.distributed.partition import (
    DistributedOperator,
    HaloExchange,
    LocalRows,
    RowPartition,
    all_max,
    all_sum,
    broadcast_first,
    connected_labels,
    halo_exchange,
    local_rows,
    row_partition,
)
from graphpe.ops.distributed.propagate import (
    distributed_rfp,
    normalize_distributed,
    orthonormalize_distributed,
    own_draws,
    propagation_operator_rows,
)
from graphpe.ops.distributed.walk import distributed_sampled_landing_probs

__all__ = [
    "ComponentNullSpace",
    "DistributedOperator",
    "HaloExchange",
    "LocalEigenpairs",
    "LocalRows",
    "RowPartition",
    "all_max",
    "broadcast_first",
    "all_sum",
    "canonical_signs_distributed",
    "connected_labels",
    "distributed_laplacian_eigenpairs",
    "distributed_lcp",
    "distributed_rfp",
    "distributed_sampled_landing_probs",
    "halo_exchange",
    "laplacian_operator",
    "local_rows",
    "normalize_distributed",
    "null_space",
    "orthonormalize_distributed",
    "own_draws",
    "propagation_operator_rows",
    "row_partition",
]

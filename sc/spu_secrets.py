"""Recording an SPU's secret verifier in its KV spec (managed SPUs' registration).

The SC's provisioner makes each managed SPU's secret (``spark_stream.spu_identity``) and
calls ``record_verifier`` before it starts the process: the KV then holds the verifier
the SPU's ``SPU_CONNECT`` is checked against. The SPU object may not be written yet (the
group controller creates it in the same batch as the ``ProvisionSpu``), so a missing
object is waited for, bounded. Keep this the one place that writes verifiers for the SC.
"""

from __future__ import annotations

import asyncio
import logging

from sc.kv.store import KvStore
from spark_stream.errors import ConflictError, ProvisionError
from spark_stream.models import Spu

__all__ = ["record_verifier"]

log = logging.getLogger(__name__)

_POLL_S = 0.05


async def record_verifier(
    kv: KvStore,
    name: str,
    verifier: str,
    timeout: float = 10.0,  # noqa: ASYNC109 - a bound on waiting for the object
) -> None:
    """Make SPU ``name``'s spec hold ``verifier`` (no write when it already does).

    Raises:
        ProvisionError: the SPU object did not appear within ``timeout``, or kept
            changing under the write.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        spu = await kv.get(Spu.kind, name)
        if spu is None:
            await asyncio.sleep(_POLL_S)  # created by a KV write running beside us
            continue
        assert isinstance(spu, Spu)
        if spu.spec.secret_verifier == verifier:
            return
        spec = spu.spec.model_copy(update={"secret_verifier": verifier})
        try:
            await kv.update_spec(Spu.kind, name, spec, spu.revision)
        except ConflictError:
            continue  # written meanwhile (e.g. its endpoints): read it again
        log.info("spu secret verifier recorded spu=%s", name)
        return
    raise ProvisionError(f"SPU {name!r}: its secret verifier could not be recorded in {timeout}s")

"""The Streaming Processing Unit: replica storage and the data plane (seed ``002``).

``python -m spu`` runs one (``spu.app.SpuApp``). Modules: ``storage/`` (the replica log
engine), ``dispatcher`` (SC specs to controllers) and its pure planner
``dispatch_plan``, ``leader`` and ``follower`` (the controllers), ``follower_session``
(the leader's side of replication), ``producers`` (idempotent producer state),
``replication`` (ISR and high-watermark math), ``public_api`` / ``private_api`` (one
handler per api), ``private_messages`` (the SPU-to-SPU protocol), ``sc_link`` (specs
in, live replica status out), ``settings`` (packaged ``spu.yaml`` and ``FLUVIO_SPU_*``).
"""

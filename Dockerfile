# The SC and the SPU in one image (docs/deploy.md). Build from the repository root:
#   docker build -t spark-stream:0.1.0 .
# The default command runs the SC (fluvio-sc); an SPU is the same image with the command
# fluvio-spu (deploy/k8s/spu.yaml). The image holds the core install only: no pyspark.
# tests/packaging/test_image.py runs CMD with these ENV values against a real Redis.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md pyspark_fluvio.py ./
COPY spark_stream spark_stream
COPY sc sc
COPY spu spu
COPY datasource datasource
COPY jobs jobs
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:3.11-slim
COPY --from=build /dist /dist
RUN pip install --no-cache-dir /dist/*.whl \
    && rm -rf /dist \
    && groupadd --gid 10001 fluvio \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /data fluvio \
    && mkdir -p /data /etc/fluvio \
    && chown fluvio:fluvio /data
# The SC binds every interface; an SPU binds and advertises FLUVIO_SPU_HOST, which the
# deployment sets to an address clients reach (the pod IP on Kubernetes).
# FLUVIO_CONF_DIR: mount sc.yaml / spu.yaml there to override the packaged defaults.
ENV FLUVIO_SC_HOST=0.0.0.0 \
    FLUVIO_SC_DATA_DIR=/data/sc \
    FLUVIO_SPU_DATA_DIR=/data/spu \
    FLUVIO_CONF_DIR=/etc/fluvio \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
WORKDIR /data
USER 10001:10001
# SC public and private, SPU public and private
EXPOSE 9003 9004 9005 9006
CMD ["fluvio-sc"]

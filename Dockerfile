# PTO Crosscheck image for the compose services (api, migrate, workers).
#
# base: the service, SIM-capable (pypto's SIM compiles a host binary with g++/ld/objcopy, and the
#       graph-verify calculator is built with an ELF cmake, not the pip wrapper: pypto notes 2-3).
# npu:  base plus torch_npu, for hosts with an Ascend NPU; CANN and the driver are mounted read-only
#       from the host (docker-compose.yml), never baked in.
#
# torch from PyPI is the large CUDA build on x86_64; to get the CPU build, pass
# --build-arg PIP_EXTRA_INDEX_URL=<PyTorch's CPU wheel index>.
FROM python:3.11-slim AS base

ARG PIP_EXTRA_INDEX_URL=""
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_EXTRA_INDEX_URL=${PIP_EXTRA_INDEX_URL} \
    DATA_DIR=/data \
    CACHE_DIR=/var/cache/crosscheck

RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ binutils cmake make util-linux \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/crosscheck
COPY pyproject.toml README.md constraints.txt ./
COPY runtime ./runtime
COPY client ./client
COPY jobqueue ./jobqueue
COPY server ./server
COPY worker ./worker
COPY web ./web
COPY migrations ./migrations
# Not editable: the sandboxed job uid must be able to read the installed packages (docs/platform.md §2).
# job-tools: the test tools kernel test files import (pytest), so a job never fails for lack of them.
# constraints.txt: the lock, so the image holds the versions the tests passed with (docs/dependencies.md);
# all but torch, whose lock names the CPU build of the test host (pyproject pins torch==2.13.0 for the image).
RUN grep -v "^torch==" constraints.txt > /tmp/constraints.txt \
    && pip install -c /tmp/constraints.txt ".[job-tools]" && mkdir -p /data /var/cache/crosscheck

EXPOSE 8000
CMD ["crosscheck", "up", "--host", "0.0.0.0", "--port", "8000", "--data-dir", "/data"]


FROM base AS npu
# The torch_npu release that matches torch 2.13.0 and the host's CANN (Ascend's compatibility table).
ARG TORCH_NPU_VERSION=""
RUN test -n "${TORCH_NPU_VERSION}" || { echo "build the npu target with --build-arg TORCH_NPU_VERSION=..."; exit 1; } \
    && pip install "torch_npu==${TORCH_NPU_VERSION}"

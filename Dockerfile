FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY schema schema
COPY graph graph
COPY extraction extraction
COPY api api
COPY palimpsest palimpsest
# CPU-only torch first, from PyTorch's own index: the image embeds on CPU, and PyPI's Linux torch
# wheel brings CUDA (nvidia-*, triton and CUDA libraries: 4.6 GB of its 5.3 GB installed; see docs/OPERATIONS.md). The
# version matches pyproject.toml's pin (a test checks), so `pip install .` keeps this one.
ARG TORCH_VERSION=2.15.0
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu "torch==${TORCH_VERSION}"
RUN pip install --no-cache-dir .
# GraphiQL's pinned files, fetched with npm at build time (npm leaves the image in the same layer),
# so the running container serves them itself and needs no CDN.
ENV PALIMPSEST_CACHE_DIR=/opt/palimpsest
RUN apt-get update && apt-get install -y --no-install-recommends npm \
    && palimpsest graphiql-assets \
    && apt-get purge -y --auto-remove npm && rm -rf /var/lib/apt/lists/* "$HOME/.npm"
# litellm prices calls from the cost map bundled with the pinned release, never fetching one (README, Configuration).
ENV LITELLM_LOCAL_MODEL_COST_MAP=True
EXPOSE 8000
# --demo: the `demo` namespace is written on the first start only (an empty database), never again.
CMD ["palimpsest", "serve", "--host", "0.0.0.0", "--port", "8000", "--demo"]

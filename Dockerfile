FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY schema schema
COPY graph graph
COPY extraction extraction
COPY api api
RUN pip install --no-cache-dir .
EXPOSE 8000
CMD ["palimpsest", "serve", "--host", "0.0.0.0", "--port", "8000"]

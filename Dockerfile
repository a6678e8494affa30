# streameval: score coding agents while they run.
#   docker build -t streameval .
#   docker run --rm -v /srv/runs:/traces -v /srv/gold:/gold:ro \
#       -v /srv/repos:/repos:ro -p 127.0.0.1:9108:9108 streameval \
#       watch /traces --gold /gold/gold.jsonl --repos /repos --host 0.0.0.0
FROM python:3.11-slim

# git: repo.py reads files at the gold base commit with `git cat-file --batch`
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/* \
 # mounted clones belong to another uid; let git read them
 && git config --system --add safe.directory '*'

WORKDIR /src
COPY pyproject.toml README.md ./
COPY streameval ./streameval
RUN pip install --no-cache-dir . && rm -rf /src

RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin streameval \
 # a named volume mounted on /state starts with this ownership (checkpoint, records)
 && mkdir -p /state && chown 10001:10001 /state
USER 10001
WORKDIR /home/streameval

EXPOSE 9108
ENTRYPOINT ["streameval"]
CMD ["watch", "/traces", "--gold", "/gold/gold.jsonl", "--repos", "/repos", "--host", "0.0.0.0", "--port", "9108"]

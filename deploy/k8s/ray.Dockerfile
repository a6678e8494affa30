# streameval with Ray, for the RayJob (replay-rayjob.yaml): the head, the workers and the
# driver run this one image, so Ray and streameval have one version across the cluster.
#   docker build -t streameval:0.1.0 . && docker build -t streameval-ray:0.1.0 -f deploy/k8s/ray.Dockerfile .
FROM streameval:0.1.0
USER root
# KubeRay's probes call wget; Ray's own dashboard agent answers them
RUN apt-get update \
 && apt-get install -y --no-install-recommends wget \
 && rm -rf /var/lib/apt/lists/* \
 && pip install --no-cache-dir 'ray[default]==2.60.0'
USER 10001
# KubeRay sets each container's command (ray start ...); no streameval entrypoint here
ENTRYPOINT []
CMD ["bash"]

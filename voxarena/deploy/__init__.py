"""Deployment files written from the service catalogue by ``make generate`` (``generate``): the compose
file and its mTLS overlay (``compose``), the Swarm stack (``swarm``), the Kubernetes tree (``k8s``,
``k8s_objects``) and the README's services table (``readme_table``)."""

"""Deployment descriptions generated from the service catalogue (``voxarena.deploy.k8s``: Kubernetes)."""

"""make hub: the course on JupyterHub on one machine (docs/hub.md).

settings (where things are, from the environment), accounts (the class's local users and groups: make hub-users),
exchange (nbgrader's shared exchange, permissioned as nbgrader's JupyterHub chapter gives it, and the course
folders students must not read), jupyterhub_config.py (the hub: authenticator, spawner, Formgrader and the grading
service as hub services), students/ (the Jupyter config every student's server reads), proxy/ (the proxy's pinned
npm packages).
"""

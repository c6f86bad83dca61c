"""The chart's default images are the images scripts/build-images.sh builds.

check_image_defaults: with default values, the controller Deployment's image
and its --trainer-image are the tags docker/controller.Dockerfile and
docker/trainer.Dockerfile are built with (the `docker build ... -t TAG .` line
of their header), those Dockerfiles are Debian-based (so the script builds
them), and the script tags them the same (its IMAGE table, at the chart's
appVersion).
"""

import os
import re

BUILD_LINE = re.compile(r"^#\s+docker build -f docker/(\S+)\.Dockerfile\s+-t\s+(\S+)\s+\.$", re.M)
SCRIPT_IMAGE = re.compile(r'^\s+\[([a-z-]+)\]="([^"]+)"$', re.M)


def dockerfile_tags(root):
    """{name: tag} from each docker/NAME.Dockerfile's documented build command."""
    tags = {}
    for fname in sorted(os.listdir(os.path.join(root, "docker"))):
        if fname.endswith(".Dockerfile"):
            with open(os.path.join(root, "docker", fname)) as f:
                for name, tag in BUILD_LINE.findall(f.read()):
                    if name + ".Dockerfile" == fname:
                        tags[name] = tag
    return tags


def script_tags(root, version):
    """{name: tag} of scripts/build-images.sh's IMAGE table, $version filled in."""
    with open(os.path.join(root, "scripts", "build-images.sh")) as f:
        text = f.read()
    return {name: tag.replace("$version", version) for name, tag in SCRIPT_IMAGE.findall(text)}


def is_debian_based(root, name):
    with open(os.path.join(root, "docker", name + ".Dockerfile")) as f:
        return re.search(r"^ARG DEBIAN_IMAGE=debian:\d+$", f.read(), re.M) is not None


def check_image_defaults(c, docs, root, app_version):
    ctr = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    ctr = ctr["containers"][0]
    args = ctr["args"]
    trainer = args[args.index("--trainer-image") + 1] if "--trainer-image" in args else None
    from_docker = dockerfile_tags(root)
    from_script = script_tags(root, app_version)
    for name, image in [("controller", ctr["image"]), ("trainer", trainer)]:
        c.equal(f"default {name} image is docker/{name}.Dockerfile's tag", image,
                from_docker.get(name))
        c.equal(f"default {name} image is what build-images.sh tags", image,
                from_script.get(name))
        c.check(f"docker/{name}.Dockerfile is Debian-based (build-images.sh builds it)",
                is_debian_based(root, name))
    c.equal("build-images.sh builds every Debian-based Dockerfile, with its documented tag",
            from_script,
            {n: t for n, t in from_docker.items() if is_debian_based(root, n)})

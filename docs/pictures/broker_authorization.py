"""How the StandardAuthorizer decides one operation on one resource, and where it is asked."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _decision(out_dir):
    fig, ax = _boxes.figure(14.2, 6.4)
    b, a = _boxes.box, _boxes.arrow

    def label(x, y, text):
        ax.text(x, y, text, fontsize=8, color="#333333")

    ax.text(0.2, 6.05, "One request, one check: KafkaApis.authorize(request, operation, resource)",
            fontsize=11, weight="bold")
    b(ax, 0.2, 4.5, 2.6, 1.0, "Processor\nSASL user ->\nUser:alice\n(else User:ANONYMOUS)",
      "thread", 8)
    b(ax, 3.6, 4.5, 3.0, 1.0, "KafkaApis handler\nProduce: WRITE topic\nFetch (follower):\n"
      "CLUSTER_ACTION cluster", "python", 8)
    a(ax, 2.8, 5.0, 3.6, 5.0)
    label(2.85, 5.15, "Request")
    b(ax, 7.6, 4.6, 2.4, 0.8, "principal in\nsuper.users?", "python", 8)
    a(ax, 6.6, 5.0, 7.6, 5.0)
    b(ax, 11.4, 4.6, 2.4, 0.8, "ALLOWED", "thread", 9)
    a(ax, 10.0, 5.0, 11.4, 5.0)
    label(10.4, 5.15, "yes")
    b(ax, 7.6, 2.9, 2.4, 1.0, "a matching DENY?\n(literal, *, or\nprefix of the name)",
      "python", 8)
    a(ax, 8.8, 4.6, 8.8, 3.9)
    label(8.9, 4.2, "no")
    b(ax, 11.4, 2.9, 2.4, 1.0, "DENIED\nTOPIC_/GROUP_/\nCLUSTER_AUTHORIZATION\n_FAILED", "wire", 7)
    a(ax, 10.0, 3.4, 11.4, 3.4)
    label(10.4, 3.55, "yes: DENY wins")
    b(ax, 7.6, 1.2, 2.4, 1.0, "a matching ALLOW?\n(the operation, ALL,\nor one implying it)",
      "python", 8)
    a(ax, 8.8, 2.9, 8.8, 2.2)
    label(8.9, 2.5, "no")
    a(ax, 10.0, 1.9, 12.6, 4.6)
    label(11.3, 2.2, "yes")
    b(ax, 3.6, 0.3, 3.4, 1.0, "no ACL names the resource\nand allow.everyone.\nif.no.acl.found=true?",
      "python", 8)
    a(ax, 7.6, 1.5, 7.0, 0.9)
    label(7.05, 1.4, "no")
    b(ax, 0.2, 0.3, 2.6, 1.0, "yes: ALLOWED\nno: DENIED", "thread", 8)
    a(ax, 3.6, 0.8, 2.8, 0.8)
    b(ax, 0.2, 2.2, 6.4, 1.3, "The ACLs: (pattern, entry) pairs\n"
      "TOPIC orders- PREFIXED | User:alice * WRITE ALLOW\n"
      "a cluster: the controller's, pulled by every broker", "wire", 8)
    _boxes.save(fig, out_dir / "broker_authorization.png")


def draw(out_dir):
    _decision(pathlib.Path(out_dir))

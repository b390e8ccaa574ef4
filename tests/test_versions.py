"""The package's version changes with what decides whether two installs work together."""

from eventpy._version import GENERATED_INTERFACE, SPEAKS, __version__
from eventpy.runtime.transports._handshake import PROTOCOL


def test_a_new_protocol_or_generated_interface_is_a_new_version():
    assert SPEAKS.get(__version__) == (PROTOCOL, GENERATED_INTERFACE), (
        f"eventpy {__version__} is listed as speaking {SPEAKS.get(__version__)}, but speaks protocol {PROTOCOL} "
        f"and generated-code interface {GENERATED_INTERFACE}: give the package a new version in "
        "eventpy/_version.py and list it in SPEAKS (pip would keep an install of the old one)")


def test_each_version_listed_speaks_its_own_protocol_and_interface():
    assert len(set(SPEAKS.values())) == len(SPEAKS)

"""Pure tests of the launcher building blocks: rendered configs, container specs, URL and option
parsing, install plans, readiness frames. Nothing here starts a process or opens a socket."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from jmslike.conformance.brokers import (
    BrokerStartError,
    LauncherUnavailableError,
    PortInUseError,
    check_kind,
    check_launcher,
    create,
)
from jmslike.conformance.brokers.activemq import (
    ActiveMQBroker,
    ActiveMQConfig,
    ActiveMQUser,
    TransportConnector,
    activemq_command,
    render_activemq_xml,
    render_log4j2_properties,
    render_log4j_properties,
    stomp_uri,
)
from jmslike.conformance.brokers.docker import (
    CONTAINER_DATA_DIRS,
    HOST_DIR_LABEL,
    DockerBroker,
    Network,
    choose_image,
    container_spec,
    host_container_spec,
)
from jmslike.conformance.brokers.docker_layout import host_layout
from jmslike.conformance.brokers.external import ExternalBroker, parse_broker_url, urls_from_spec
from jmslike.conformance.brokers.images import dockerfile, image_tag
from jmslike.conformance.brokers.install import ARTEMIS_MESSAGE, Facts, plan_install
from jmslike.conformance.brokers.rabbitmq import (
    RabbitMQBroker,
    RabbitMQConfig,
    find_plugins_dir,
    plugin_closure,
    rabbitmq_environment,
    render_enabled_plugins,
    render_rabbitmq_conf,
)
from jmslike.conformance.brokers.readiness import build_connect_frame, parse_reply
from jmslike.conformance.plugin import make_unique_name, parse_settings

AMQ = "{http://activemq.apache.org/schema/core}"
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


# -- ActiveMQ ----------------------------------------------------------------------------------------


def _broker_element(config: ActiveMQConfig) -> ET.Element:
    root = ET.fromstring(render_activemq_xml(config))
    broker = root.find(f"{AMQ}broker")
    assert broker is not None
    return broker


def test_activemq_xml_defaults() -> None:
    config = ActiveMQConfig(stomp_port=12345, data_dir="/srv/amq/data")
    broker = _broker_element(config)
    assert broker.get("useJmx") == "false"
    assert broker.get("persistent") == "true"
    assert broker.get("schedulerSupport") == "true"  # JMS 2.0 delivery delay
    assert broker.get("dataDirectory") == "/srv/amq/data"
    kahadb = broker.find(f"{AMQ}persistenceAdapter/{AMQ}kahaDB")
    assert kahadb is not None and kahadb.get("directory") == "/srv/amq/data/kahadb"
    connectors = broker.findall(f"{AMQ}transportConnectors/{AMQ}transportConnector")
    assert [(c.get("name"), c.get("uri")) for c in connectors] == [
        ("stomp", "stomp://127.0.0.1:12345?transport.closeAsync=false")
    ]
    assert broker.find(f"{AMQ}plugins") is None
    assert broker.find(f"{AMQ}destinationPolicy") is None


def test_activemq_xml_hooks() -> None:
    config = ActiveMQConfig(
        stomp_port=1,
        data_dir="/d",
        extra_connectors=(TransportConnector("openwire", "tcp://127.0.0.1:2"),),
        persist_jms_redelivered=True,
        policy_entries_xml='<policyEntry topic=">" producerFlowControl="false"/>',
        plugins_xml="<timeStampingBrokerPlugin/>",
        users=(ActiveMQUser("alice", "s3cret&<", groups=("admins", "users")),),
        broker_attributes={"advisorySupport": "false", "useJmx": "true"},
        extra_broker_xml="<networkConnectors/>",
    )
    broker = _broker_element(config)
    assert broker.get("advisorySupport") == "false"
    assert broker.get("useJmx") == "true"  # overrides win
    names = [c.get("name") for c in broker.iter(f"{AMQ}transportConnector")]
    assert names == ["stomp", "openwire"]
    entries = broker.findall(f"{AMQ}destinationPolicy/{AMQ}policyMap/{AMQ}policyEntries/{AMQ}policyEntry")
    assert [e.attrib for e in entries] == [
        {"queue": ">", "persistJMSRedelivered": "true"},
        {"topic": ">", "producerFlowControl": "false"},
    ]
    user = broker.find(f"{AMQ}plugins/{AMQ}simpleAuthenticationPlugin/{AMQ}users/{AMQ}authenticationUser")
    assert user is not None
    assert user.attrib == {"username": "alice", "password": "s3cret&<", "groups": "admins,users"}
    assert broker.find(f"{AMQ}plugins/{AMQ}timeStampingBrokerPlugin") is not None
    assert broker.find(f"{AMQ}networkConnectors") is not None


def test_activemq_xml_escapes_paths() -> None:
    broker = _broker_element(ActiveMQConfig(stomp_port=1, data_dir='/tmp/a&b"c/data'))
    assert broker.get("dataDirectory") == '/tmp/a&b"c/data'


def test_activemq_user_password_not_in_repr() -> None:
    assert "pw-123" not in repr(ActiveMQUser("u", "pw-123"))


def test_stomp_uri_options() -> None:
    config = ActiveMQConfig(stomp_port=7, data_dir="/d", stomp_options={"a": "1", "b": "2"})
    assert stomp_uri(config) == "stomp://127.0.0.1:7?a=1&b=2"
    assert stomp_uri(ActiveMQConfig(stomp_port=7, data_dir="/d", stomp_options={})) == "stomp://127.0.0.1:7"


def test_log4j_configs_log_to_console() -> None:
    assert "log4j.rootLogger=INFO, stdout" in render_log4j_properties()
    assert "org.apache.log4j.ConsoleAppender" in render_log4j_properties()
    assert "appender.console.type=Console" in render_log4j2_properties()


def test_activemq_command() -> None:
    argv = activemq_command(
        java="/usr/bin/java", home=Path("/usr/share/activemq"), base_dir=Path("/b"), heap_mb=512
    )
    assert argv[0] == "/usr/bin/java"
    assert "-Xmx512M" in argv
    assert "-Dactivemq.base=/b" in argv and "-Dactivemq.data=/b/data" in argv
    assert argv[-4:] == [
        "-jar",
        "/usr/share/activemq/bin/activemq.jar",
        "start",
        "xbean:file:/b/conf/activemq.xml",
    ]


def test_activemq_handle_is_inert_until_started(tmp_path: Path) -> None:
    broker = ActiveMQBroker(port=23456, data_dir=tmp_path, password="hidden-pw")
    assert broker.url == "activemq://127.0.0.1:23456"
    assert not broker.is_running() and broker.pid is None
    assert "hidden-pw" not in repr(broker)
    assert broker.config.stomp_port == 23456
    assert broker.config.data_dir == str(tmp_path.resolve() / "data")
    broker.close()
    assert tmp_path.exists()  # a given data dir is never removed


def test_activemq_unknown_config_option_is_an_error() -> None:
    with pytest.raises(TypeError, match="no_such_option"):
        ActiveMQBroker(no_such_option=True)


# -- RabbitMQ ----------------------------------------------------------------------------------------


def test_rabbitmq_conf() -> None:
    text = render_rabbitmq_conf(RabbitMQConfig(stomp_port=1, amqp_port=2, management_port=3))
    lines = set(text.splitlines())
    assert {
        "listeners.tcp.default = 127.0.0.1:2",
        "stomp.listeners.tcp.1 = 127.0.0.1:1",
        "loopback_users = none",
        "management.tcp.port = 3",
        "management.tcp.ip = 127.0.0.1",
    } <= lines
    no_mgmt = render_rabbitmq_conf(RabbitMQConfig(stomp_port=1, amqp_port=2, extra_config="a.b = c"))
    assert "management" not in no_mgmt
    assert no_mgmt.rstrip().endswith("a.b = c")


def test_rabbitmq_enabled_plugins() -> None:
    assert render_enabled_plugins(RabbitMQConfig(1, 2)) == "[rabbitmq_stomp].\n"
    assert (
        render_enabled_plugins(RabbitMQConfig(1, 2, management_port=3, plugins=("rabbitmq_shovel",)))
        == "[rabbitmq_stomp,rabbitmq_management,rabbitmq_shovel].\n"
    )


def _plugin(root: Path, app: str, version: str, needs: str) -> Path:
    directory = root / f"{app}-{version}"
    (directory / "ebin").mkdir(parents=True)
    (directory / "ebin" / f"{app}.app").write_text(
        f"{{application, '{app}', [\n\t{{vsn, \"{version}\"}},\n\t{{applications, [{needs}]}}]}}.\n"
    )
    return directory


def test_rabbitmq_plugin_closure_follows_app_files(tmp_path: Path) -> None:
    """Only what the enabled plugins need, transitively; OTP's own applications are not plugins."""
    rabbit = _plugin(tmp_path, "rabbit", "3.10.8", "kernel,stdlib,rabbit_common,ra")
    prelaunch = _plugin(tmp_path, "rabbitmq_prelaunch", "3.10.8", "kernel,rabbit_common")
    common = _plugin(tmp_path, "rabbit_common", "3.10.8", "kernel,ssl")
    ra = _plugin(tmp_path, "ra", "2.2.0", "kernel,aten")
    aten = _plugin(tmp_path, "aten", "0.5.8", "kernel")
    stomp = _plugin(tmp_path, "rabbitmq_stomp", "3.10.8", "kernel,rabbit,amqp_client")
    amqp = _plugin(tmp_path, "amqp_client", "3.10.8", "kernel,rabbit_common")
    _plugin(tmp_path, "rabbitmq_mqtt", "3.10.8", "kernel,rabbit")  # not enabled, so not linked
    (tmp_path / "README").write_text("not a plugin")
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel", "stdlib", "ssl"}) == sorted(
        [rabbit, prelaunch, common, ra, aten, stomp, amqp]
    )


def test_rabbitmq_plugin_closure_gives_up_rather_than_guess(tmp_path: Path) -> None:
    """A plugin missing, an application neither a plugin nor Erlang's, an .app it cannot read, a packed plugin:
    None, and the launcher uses RabbitMQ's whole directory."""
    _plugin(tmp_path, "rabbit", "3.10.8", "kernel")
    _plugin(tmp_path, "rabbitmq_prelaunch", "3.10.8", "kernel")
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel"}) is None  # the enabled plugin is not there
    stomp = _plugin(tmp_path, "rabbitmq_stomp", "3.10.8", "kernel,rabbit,unheard_of")
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel"}) is None  # neither a plugin nor Erlang's
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel", "unheard_of"}) is not None
    (stomp / "ebin" / "rabbitmq_stomp.app").write_text('{application, rabbitmq_stomp, [{vsn, "3.10.8"}]}.\n')
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel"}) is None  # no applications list: no guess
    (stomp / "ebin" / "rabbitmq_stomp.app").write_text(
        "{application, rabbitmq_stomp, [\n  { applications , [\n    kernel,\n    'rabbit'\n  ]}]}.\n"
    )
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel"}) is not None  # spaces, lines, quotes
    (tmp_path / "rabbitmq_shovel-3.10.8.ez").write_bytes(b"PK")
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel"}) is None


def test_rabbitmq_plugin_names_end_at_the_first_dash_as_rabbitmq_reads_them(tmp_path: Path) -> None:
    _plugin(tmp_path, "rabbit", "3.10.8", "kernel")
    _plugin(tmp_path, "rabbitmq_prelaunch", "3.10.8", "kernel")
    odd = _plugin(tmp_path, "rabbitmq_stomp", "1.0.0-rc.1", "kernel")
    assert odd in (plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel"}) or [])


def test_rabbitmq_two_versions_of_one_plugin_are_left_to_rabbitmq(tmp_path: Path) -> None:
    _plugin(tmp_path, "rabbit", "3.10.8", "kernel")
    _plugin(tmp_path, "rabbitmq_prelaunch", "3.10.8", "kernel")
    _plugin(tmp_path, "rabbitmq_stomp", "3.10.8", "kernel")
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel"}) is not None
    _plugin(tmp_path, "rabbitmq_stomp", "3.10.9", "kernel")
    assert plugin_closure(tmp_path, ["rabbitmq_stomp"], {"kernel"}) is None


def test_rabbitmq_launcher_links_a_fresh_plugins_directory_at_each_start(tmp_path: Path) -> None:
    """What RABBITMQ_PLUGINS_DIR names: links made anew (the old set removed), or nothing on the fallback. The
    hooks start() calls are called directly here: no process is started."""
    home = tmp_path / "rabbitmq"
    (home / "sbin").mkdir(parents=True)
    (home / "sbin" / "rabbitmq-server").write_text("#!/bin/sh\n")
    plugins = home / "plugins"
    for app in ("rabbit", "rabbitmq_prelaunch", "rabbitmq_stomp"):
        _plugin(plugins, app, "3.10.8", "")  # no dependencies: nothing asked of the machine's Erlang
    _plugin(plugins, "rabbitmq_mqtt", "3.10.8", "")
    (tmp_path / "data").mkdir()  # start() makes it before linking
    broker = RabbitMQBroker(management=False, data_dir=tmp_path / "data")
    broker._server = home / "sbin" / "rabbitmq-server"
    broker._link_plugins()
    first = Path(broker._environment()["RABBITMQ_PLUGINS_DIR"])
    assert sorted(link.name for link in first.iterdir()) == [
        "rabbit-3.10.8",
        "rabbitmq_prelaunch-3.10.8",
        "rabbitmq_stomp-3.10.8",
    ]
    assert all(link.is_symlink() and link.resolve().parent == plugins for link in first.iterdir())
    broker._link_plugins()
    second = Path(broker._environment()["RABBITMQ_PLUGINS_DIR"])
    assert second != first and not first.exists() and second.is_dir()
    (plugins / "rabbitmq_shovel-3.10.8.ez").write_bytes(b"PK")
    broker._link_plugins()
    assert "RABBITMQ_PLUGINS_DIR" not in broker._environment() and not second.exists()
    assert (plugins / "rabbit-3.10.8" / "ebin" / "rabbit.app").is_file()  # RabbitMQ's own files untouched


def test_rabbitmq_plugins_dir_is_beside_sbin(tmp_path: Path) -> None:
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin" / "rabbitmq-server").write_text("#!/bin/sh\n")
    assert find_plugins_dir(tmp_path / "sbin" / "rabbitmq-server") is None
    (tmp_path / "plugins").mkdir()
    assert find_plugins_dir(tmp_path / "sbin" / "rabbitmq-server") == tmp_path / "plugins"


def test_rabbitmq_environment_is_private() -> None:
    env = rabbitmq_environment(
        base_dir=Path("/b"), node_name="jmslike-x@localhost", dist_port=5, epmd_port=6, amqp_port=7
    )
    assert env["HOME"] == "/b/home"
    assert env["RABBITMQ_NODENAME"] == "jmslike-x@localhost"
    assert env["RABBITMQ_DIST_PORT"] == "5" and env["ERL_EPMD_PORT"] == "6"
    assert env["RABBITMQ_PID_FILE"] == "/b/rabbit.pid"
    paths = [v for k, v in env.items() if k.startswith("RABBITMQ_") and v.startswith("/")]
    assert paths and all(p.startswith("/b/") for p in paths)


def test_rabbitmq_handle_ports_are_distinct(tmp_path: Path) -> None:
    broker = RabbitMQBroker(data_dir=tmp_path, password="hidden-pw")
    ports = [broker.port, broker.amqp_port, broker.management_port, broker.dist_port, broker.epmd_port]
    assert len(set(ports)) == 5
    assert broker.management_url == f"http://127.0.0.1:{broker.management_port}"
    assert re.fullmatch(r"jmslike-[0-9a-f]{8}@localhost", broker.node_name)
    assert "hidden-pw" not in repr(broker)
    assert RabbitMQBroker(data_dir=tmp_path, management=False).management_url is None


# -- docker ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["activemq", "artemis", "rabbitmq"])
def test_container_spec(kind: str) -> None:
    k = check_kind(kind)
    spec = container_spec(k, host_port=40000, volume="vol", name="c1", management_port=40001)
    kwargs = spec.run_kwargs()
    assert kwargs["ports"]["61613/tcp"] == ("127.0.0.1", 40000)
    assert kwargs["volumes"] == {"vol": {"bind": CONTAINER_DATA_DIRS[k], "mode": "rw"}}
    assert kwargs["detach"] is True and kwargs["name"] == "c1"
    if k == "rabbitmq":
        assert kwargs["image"] == "rabbitmq:3-management"
        assert kwargs["ports"]["15672/tcp"] == ("127.0.0.1", 40001)
        assert "rabbitmq_stomp" in " ".join(kwargs["command"])
    elif k == "artemis":
        assert kwargs["image"].startswith("apache/activemq-artemis")
        assert kwargs["environment"]["ARTEMIS_USER"] == "artemis"
    else:
        assert kwargs["image"].startswith("apache/activemq-classic")
        assert "command" not in kwargs


def test_container_spec_hides_credentials_and_takes_image() -> None:
    spec = container_spec("artemis", host_port=1, volume="v", name="n", password="pw-xyz", image="my/img:1")
    assert "pw-xyz" not in repr(spec)
    assert spec.image == "my/img:1"


def test_docker_handle_without_engine_is_inert() -> None:
    broker = DockerBroker("rabbitmq", port=40000)
    assert broker.url == "rabbitmq://127.0.0.1:40000"
    assert not broker.is_running()
    assert broker.spec is None and broker.image is None  # chosen at the first start, with the engine
    assert broker.launcher_detail == ""
    broker.close()  # nothing was created: nothing to remove, no engine needed


@pytest.mark.parametrize(
    ("image", "network", "local", "expected"),
    [
        (None, None, "jmslike/activemq:abc", ("jmslike/activemq:abc", "host")),
        (None, None, None, ("apache/activemq-classic:latest", "bridge")),
        ("my/amq:1", None, "jmslike/activemq:abc", ("my/amq:1", "bridge")),
        (None, "bridge", "jmslike/activemq:abc", ("jmslike/activemq:abc", "bridge")),
        ("my/amq:1", "host", None, ("my/amq:1", "host")),
    ],
)
def test_choose_image(
    image: str | None, network: Network | None, local: str | None, expected: object
) -> None:
    assert choose_image("activemq", image=image, network=network, local=local) == expected


def test_activemq_host_layout_is_the_process_launchers_config_with_xstream() -> None:
    layout = host_layout(
        "activemq", stomp_port=41000, ports={}, user="u", password="p", node_name="n@localhost"
    )
    root = ET.fromstring(layout.files["conf/activemq.xml"])
    connectors = root.findall(f"{AMQ}broker/{AMQ}transportConnectors/{AMQ}transportConnector")
    assert [c.get("uri") for c in connectors] == ["stomp://127.0.0.1:41000?transport.closeAsync=false"]
    assert layout.data_path == "/jmslike/data"
    assert layout.binds == {"conf": ("/jmslike/conf", "ro")}
    classpath = next(arg for arg in layout.command if arg.startswith("-Dactivemq.classpath="))
    assert "xstream.jar" in classpath and "jettison.jar" in classpath
    assert layout.command[0] == "java" and layout.command[-1] == "xbean:file:/jmslike/conf/activemq.xml"


def test_rabbitmq_host_layout_uses_private_ports_and_hides_the_account() -> None:
    ports = {"amqp": 1, "management": 2, "erlang distribution": 3, "epmd": 4}
    layout = host_layout(
        "rabbitmq", stomp_port=5, ports=ports, user="bob", password="s3cret", node_name="n@localhost"
    )
    conf = layout.files["conf/rabbitmq.conf"]
    assert "stomp.listeners.tcp.1 = 127.0.0.1:5" in conf and "management.tcp.port = 2" in conf
    assert "default_user = bob" in conf and "default_pass = s3cret" in conf
    assert layout.environment["ERL_EPMD_PORT"] == "4" and layout.environment["RABBITMQ_DIST_PORT"] == "3"
    assert layout.data_path == "/jmslike/mnesia"
    assert "s3cret" not in repr(layout)
    guest = host_layout(
        "rabbitmq", stomp_port=5, ports=ports, user="guest", password="guest", node_name="n@x"
    )
    assert "default_user" not in guest.files["conf/rabbitmq.conf"]


def test_artemis_host_layout_creates_the_instance_once_in_a_mount() -> None:
    layout = host_layout("artemis", stomp_port=5, ports={}, user="a", password="pw-1", node_name="n")
    assert layout.setup_command is not None and layout.setup_command[1] == "create"
    assert layout.binds == {"instance": ("/jmslike/instance", "rw")}
    assert layout.data_path == "/jmslike/instance/data"
    assert "pw-1" not in repr(layout)


def test_host_container_spec_mounts_volume_and_host_dirs_without_port_bindings(tmp_path: Path) -> None:
    layout = host_layout("activemq", stomp_port=41000, ports={}, user="u", password="p", node_name="n")
    spec = host_container_spec(
        layout, image="jmslike/activemq:abc", name="c", volume="vol", host_dir=tmp_path, labels={"l": "1"}
    )
    kwargs = spec.run_kwargs()
    assert kwargs["network_mode"] == "host" and "ports" not in kwargs and "hostname" not in kwargs
    assert kwargs["volumes"] == {
        "vol": {"bind": "/jmslike/data", "mode": "rw"},
        str(tmp_path / "conf"): {"bind": "/jmslike/conf", "mode": "ro"},
    }
    assert kwargs["labels"]["l"] == "1" and kwargs["labels"][HOST_DIR_LABEL] == str(tmp_path)


def test_image_tags_follow_the_recipe(tmp_path: Path) -> None:
    assert image_tag("activemq") == image_tag("activemq")
    assert image_tag("activemq") != image_tag("rabbitmq")
    assert image_tag("activemq").startswith("jmslike/activemq:")
    assert "Debian" in dockerfile("rabbitmq") and "ARG BASE" in dockerfile("artemis")
    home = tmp_path / "artemis"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "artemis-server-1.jar").write_bytes(b"x")
    first = image_tag("artemis", home)
    (home / "lib" / "artemis-server-1.jar").write_bytes(b"xy")  # another Artemis: another image
    assert image_tag("artemis", home) != first
    with pytest.raises(LauncherUnavailableError):
        image_tag("artemis", None)


# -- external ----------------------------------------------------------------------------------------


def test_parse_broker_url() -> None:
    address = parse_broker_url("rabbitmq+ssl://bob:p%40ss@mq.example:61614")
    assert (address.kind, address.host, address.port, address.ssl) == ("rabbitmq", "mq.example", 61614, True)
    assert (address.user, address.password) == ("bob", "p@ss")
    assert "p@ss" not in repr(address)
    assert parse_broker_url("activemq://h").port == 61613
    with pytest.raises(ValueError, match="unknown broker kind"):
        parse_broker_url("kafka://h:1")


def test_urls_from_spec() -> None:
    assert urls_from_spec("activemq=activemq://a:1, rabbitmq://b:2") == {
        "activemq": "activemq://a:1",
        "rabbitmq": "rabbitmq://b:2",
    }


def test_external_handle_requires_commands() -> None:
    broker = ExternalBroker("artemis://user:pw-1@h:1")
    assert broker.user == "user" and "pw-1" not in repr(broker)
    assert broker.url == "artemis://h:1"
    with pytest.raises(Exception, match="restart_cmd"):
        broker.restart("graceful")
    with pytest.raises(Exception, match="kill_cmd"):
        broker.kill()
    with pytest.raises(Exception, match="--broker-restart-cmd"):
        broker.restart("graceful")


def test_external_needs_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JMSLIKE_BROKER_URL", raising=False)
    monkeypatch.delenv("JMSLIKE_EXTERNAL_URL", raising=False)
    with pytest.raises(LauncherUnavailableError, match="--broker-url"):
        create("activemq", "external")
    monkeypatch.setenv("JMSLIKE_BROKER_URL", "activemq=activemq://h:5")
    assert create("activemq", "external").url == "activemq://h:5"


def test_artemis_process_launcher_is_unavailable_without_artemis_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ARTEMIS_HOME", raising=False)
    with pytest.raises(
        LauncherUnavailableError, match=r"ARTEMIS_HOME is not set.*--broker-launcher external"
    ):
        create("artemis")


# -- errors, options, names ----------------------------------------------------------------------------


def test_start_error_carries_log_tail() -> None:
    err = BrokerStartError("it broke", log_tail="line 1\nline 2")
    assert "it broke" in str(err) and "line 2" in str(err)
    assert "no log" in str(BrokerStartError("it broke"))
    assert isinstance(PortInUseError("x", port=1), BrokerStartError)


def test_kind_and_launcher_checks() -> None:
    assert check_launcher("docker") == "docker"
    with pytest.raises(ValueError, match="activemq, rabbitmq, artemis"):
        check_kind("kafka")
    with pytest.raises(ValueError, match="process, docker, external"):
        check_launcher("vm")


def test_plugin_settings() -> None:
    settings = parse_settings("rabbitmq, activemq,rabbitmq", "external", "rabbitmq=rabbitmq://h:1", "r", None)
    assert settings.kinds == ("rabbitmq", "activemq")
    assert settings.launch_options("rabbitmq") == {
        "url": "rabbitmq://h:1",
        "restart_cmd": "r",
        "kill_cmd": None,
    }
    with pytest.raises(LauncherUnavailableError, match="--broker-url activemq="):
        settings.launch_options("activemq")
    assert parse_settings("activemq", "process", None, None, None).launch_options("activemq") == {}
    with pytest.raises(ValueError):
        parse_settings("", "process", None, None, None)


def test_make_unique_name() -> None:
    names = {make_unique_name("test_thing[activemq-kill] ünïcode/slash") for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert NAME_RE.match(name), name
        assert name.startswith("test_thing_activemq-kill")
        assert len(name) <= 49
    assert NAME_RE.match(make_unique_name("[]"))


def test_unique_name_fixture(unique_name: str) -> None:
    assert NAME_RE.match(unique_name)
    assert unique_name.startswith("test_unique_name_fixture-")


# -- install plan ------------------------------------------------------------------------------------


def test_install_plan() -> None:
    facts = Facts(installed={"activemq": True, "rabbitmq": False}, is_root=True, has_apt=True)
    plan = plan_install(["activemq", "rabbitmq"], facts)
    assert plan.apt_packages == ("rabbitmq-server",) and plan.ok
    not_root = plan_install(["rabbitmq"], Facts(installed={}, is_root=False, has_apt=True))
    assert not not_root.ok and not_root.apt_packages == ()
    assert "apt-get install -y rabbitmq-server" in not_root.messages["rabbitmq"]
    artemis = plan_install(["artemis"], facts)
    assert not artemis.ok and artemis.messages["artemis"] == ARTEMIS_MESSAGE
    assert "docker" in ARTEMIS_MESSAGE and "external" in ARTEMIS_MESSAGE and "ARTEMIS_HOME" in ARTEMIS_MESSAGE
    with_home = plan_install(["artemis"], Facts(installed={"artemis": True}, is_root=False, has_apt=False))
    assert with_home.ok and "ARTEMIS_HOME" in with_home.messages["artemis"]


# -- readiness frames --------------------------------------------------------------------------------


def test_connect_frame_and_replies() -> None:
    frame = build_connect_frame(host="/", login="guest", passcode="a:b")
    assert frame.startswith(b"CONNECT\n") and frame.endswith(b"\n\n\x00")
    assert b"passcode:a\\cb\n" in frame and b"host:/\n" in frame
    assert parse_reply(b"CONNECTED\nserver:RabbitMQ/3.10.8\nversion:1.2\n\n\x00").ready
    error = parse_reply(b"ERROR\nmessage:Access refused\n\nbad login\x00")
    assert not error.ready and "Access refused" in error.detail
    assert not parse_reply(b"HTTP/1.1 400 Bad Request\r\n").ready


# -- Artemis from ARTEMIS_HOME -----------------------------------------------------------------------

_GENERATED_BROKER_XML = """<configuration><core><acceptors>
         <acceptor name="artemis">tcp://0.0.0.0:61616?protocols=CORE,AMQP,STOMP;useEpoll=true</acceptor>
         <acceptor name="amqp">tcp://0.0.0.0:5672?protocols=AMQP</acceptor>
         <acceptor name="stomp">tcp://0.0.0.0:61613?tcpSendBufferSize=1048576;protocols=STOMP;useEpoll=true</acceptor>
         <acceptor name="hornetq">tcp://0.0.0.0:5445?protocols=HORNETQ,STOMP</acceptor>
         <acceptor name="mqtt">tcp://0.0.0.0:1883?protocols=MQTT</acceptor>
</acceptors></core></configuration>"""


def test_artemis_broker_xml_keeps_only_stomp_on_loopback_and_is_idempotent() -> None:
    from jmslike.conformance.brokers.artemis import configure_broker_xml

    once = configure_broker_xml(_GENERATED_BROKER_XML, "127.0.0.1", 40001)
    assert once.count("<acceptor ") == 1
    assert '<acceptor name="stomp">tcp://127.0.0.1:40001?tcpSendBufferSize=1048576;protocols=STOMP' in once
    assert "0.0.0.0" not in once
    assert configure_broker_xml(once, "127.0.0.1", 40002).count("127.0.0.1:40002") == 1
    with pytest.raises(ValueError, match="STOMP acceptor"):
        configure_broker_xml("<configuration/>", "127.0.0.1", 1)


def test_artemis_broker_xml_adds_a_loopback_core_acceptor_when_asked() -> None:
    from jmslike.conformance.brokers.artemis import configure_broker_xml

    once = configure_broker_xml(_GENERATED_BROKER_XML, "127.0.0.1", 40001, core_port=40003)
    assert once.count("<acceptor ") == 2
    assert '<acceptor name="core">tcp://127.0.0.1:40003?protocols=CORE</acceptor>' in once
    again = configure_broker_xml(once, "127.0.0.1", 40001, core_port=40004)
    assert again.count("<acceptor ") == 2 and "40003" not in again and "127.0.0.1:40004" in again
    assert configure_broker_xml(once, "127.0.0.1", 40001).count("<acceptor ") == 1


def test_artemis_profile_heap() -> None:
    from jmslike.conformance.brokers.artemis import configure_profile

    text = 'JAVA_ARGS="-XX:+UseG1GC -Xms512M -Xmx2G -Dhawtio.offline=true"'
    assert "-Xms256M -Xmx1024M" in configure_profile(text, 1024)
    assert configure_profile(configure_profile(text, 512), 512).count("-Xmx512M") == 1
    with pytest.raises(ValueError):
        configure_profile("JAVA_ARGS=''", 512)


def test_artemis_without_home_is_unavailable_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from jmslike.conformance.brokers import create, default_kinds
    from jmslike.conformance.brokers.artemis import ARTEMIS_HOME_REASON

    monkeypatch.delenv("ARTEMIS_HOME", raising=False)
    with pytest.raises(LauncherUnavailableError) as raised:
        create("artemis")
    assert raised.value.reason == ARTEMIS_HOME_REASON and "ARTEMIS_HOME" in ARTEMIS_HOME_REASON
    assert default_kinds() == (("activemq", "rabbitmq"), ARTEMIS_HOME_REASON)
    monkeypatch.setenv("ARTEMIS_HOME", "/nonexistent-artemis")
    assert default_kinds() == (("activemq", "rabbitmq", "artemis"), None)

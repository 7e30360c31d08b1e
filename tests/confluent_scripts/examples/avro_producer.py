#!/usr/bin/env python
# -*- coding: utf-8 -*-
#
# Copyright 2020 Confluent Inc.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
# http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.


# A simple example demonstrating use of AvroSerializer.

import argparse
import os
from uuid import uuid4

from six.moves import input

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, StringSerializer


class User(object):
    """
    User record

    Args:
        name (str): User's name

        favorite_number (int): User's favorite number

        favorite_color (str): User's favorite color

        address(str): User's address; confidential
    """

    def __init__(self, name, address, favorite_number, favorite_color):
        self.name = name
        self.favorite_number = favorite_number
        self.favorite_color = favorite_color
        # address should not be serialized, see user_to_dict()
        self._address = address


def user_to_dict(user, ctx):
    """
    Returns a dict representation of a User instance for serialization.

    Args:
        user (User): User instance.

        ctx (SerializationContext): Metadata pertaining to the serialization
            operation.

    Returns:
        dict: Dict populated with user attributes to be serialized.
    """

    # User._address must not be serialized; omit from dict
    return dict(name=user.name, favorite_number=user.favorite_number, favorite_color=user.favorite_color)


def delivery_report(err, msg):
    """
    Reports the failure or success of a message delivery.

    Args:
        err (KafkaError): The error that occurred, or None on success.

        msg (Message): The message that was produced or failed.

    Note:
        In the delivery report callback the Message.key() and Message.value()
        will be the binary format as encoded by any configured Serializers and
        not the same object that was passed to produce().
        If you wish to pass the original object(s) for key and value to delivery
        report callback we recommend a bound callback or lambda where you pass
        the objects along.
    """

    if err is not None:
        print("Delivery failed for User record {}: {}".format(msg.key(), err))
        return
    print(
        'User record {} successfully produced to {} [{}] at offset {}'.format(
            msg.key(), msg.topic(), msg.partition(), msg.offset()
        )
    )


def main(args):
    topic = args.topic
    is_specific = args.specific == "true"

    if is_specific:
        schema = "user_specific.avsc"
    else:
        schema = "user_generic.avsc"

    path = os.path.realpath(os.path.dirname(__file__))
    with open(f"{path}/avro/{schema}") as f:
        schema_str = f.read()

    schema_registry_conf = {'url': args.schema_registry}
    # If Confluent Cloud SR credentials are provided, add to config
    if args.sr_api_key and args.sr_api_secret:
        schema_registry_conf['basic.auth.user.info'] = f"{args.sr_api_key}:{args.sr_api_secret}"

    # Use context manager for SchemaRegistryClient to ensure proper cleanup
    with SchemaRegistryClient(schema_registry_conf) as schema_registry_client:
        avro_serializer = AvroSerializer(schema_registry_client, schema_str, user_to_dict)

        string_serializer = StringSerializer('utf_8')

        producer_conf = {'bootstrap.servers': args.bootstrap_servers}

        # Use context manager for Producer to ensure proper cleanup
        with Producer(producer_conf) as producer:
            print("Producing user records to topic {}. ^C to exit.".format(topic))
            while True:
                # Serve on_delivery callbacks from previous calls to produce()
                producer.poll(0.0)
                try:
                    user_name = input("Enter name: ")
                    user_address = input("Enter address: ")
                    user_favorite_number = int(input("Enter favorite number: "))
                    user_favorite_color = input("Enter favorite color: ")
                    user = User(
                        name=user_name,
                        address=user_address,
                        favorite_color=user_favorite_color,
                        favorite_number=user_favorite_number,
                    )
                    producer.produce(
                        topic=topic,
                        key=string_serializer(str(uuid4())),
                        value=avro_serializer(user, SerializationContext(topic, MessageField.VALUE)),
                        on_delivery=delivery_report,
                    )
                except KeyboardInterrupt:
                    break
                except ValueError:
                    print("Invalid input, discarding record...")
                    continue
            # Producer will automatically flush on context exit


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description="AvroSerializer example")
    parser.add_argument('-b', dest="bootstrap_servers", required=True, help="Bootstrap broker(s) (host[:port])")
    parser.add_argument('-s', dest="schema_registry", required=True, help="Schema Registry (http(s)://host[:port]")
    parser.add_argument(
        '--sr-api-key', dest="sr_api_key", default=None, help="Confluent Cloud Schema Registry API key (optional)"
    )
    parser.add_argument(
        '--sr-api-secret',
        dest="sr_api_secret",
        default=None,
        help="Confluent Cloud Schema Registry API secret (optional)",
    )
    parser.add_argument('-t', dest="topic", default="example_serde_avro", help="Topic name")
    parser.add_argument('-p', dest="specific", default="true", help="Avro specific record")
    main(parser.parse_args())

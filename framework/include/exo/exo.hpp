#pragma once
// Everything a handler author and an application's main() need.
#include <exo/application.hpp>
#include <exo/batch_handler.hpp>
#include <exo/errors.hpp>
#include <exo/handler.hpp>
#include <exo/options.hpp>
#include <exo/outside_transaction.hpp>
#include <exo/record.hpp>
#include <exo/types.hpp>

subscription_id = "3efdb327-6a6f-6ef8-4ce6-b18e7072a634"
client_id       = "1bee6435-97b3-5a2c-7e2a-431de78fcad4"
client_secret   = "krnZTwe1ZlBWzejcWwlyaXW2hARJ3mp3QB6dOFnF"
location        = "westeurope"
